package bench

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// idleSessions is how many idle sessions BenchmarkSessions holds: 10,000
// in full mode; 2,000 in short mode, which keeps `make bench` within its
// ten minutes on a shared 2-core machine.
func idleSessions() int {
	if full {
		return 10000
	}
	return 2000
}

// burstDials is the size of BenchmarkSessions' burst of concurrent dials.
const burstDials = 1000

// dialTimeout bounds each dial + initialize of BenchmarkSessions (and the
// client's handshake timeouts are set to match).
const dialTimeout = 60 * time.Second

// sharedDialer returns a client config whose sessions all share one UDP
// socket (one quic.Transport), so that thousands of sessions need one file
// descriptor on the client side, and a func that closes it all.
func sharedDialer(b *testing.B, base *flow.ClientConfig) (flow.ClientConfig, func()) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	_ = pc.SetReadBuffer(7 << 20)
	_ = pc.SetWriteBuffer(7 << 20)
	qt := &quic.Transport{Conn: pc}
	tlsConf := base.TLSConfig.Clone()
	tlsConf.MinVersion = tls.VersionTLS13
	cfg := *base
	cfg.Transport = &webtransport.Transport{
		TLSClientConfig: tlsConf,
		QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true,
			HandshakeIdleTimeout: dialTimeout, MaxIdleTimeout: flow.DefaultPeerIdleTimeout, KeepAlivePeriod: flow.DefaultKeepAlivePeriod},
		DialAddr: func(ctx context.Context, addr string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			ua, err := net.ResolveUDPAddr("udp", addr)
			if err != nil {
				return nil, err
			}
			return qt.DialEarly(ctx, ua, tc, qc)
		},
	}
	cfg.RefusedRetries = -1 // a refusal is a failure here
	cfg.Limits.HandshakeTimeout = dialTimeout
	return cfg, func() { qt.Close(); pc.Close() }
}

// dialMany dials n sessions, conc at a time, and returns them with the
// number of dials that failed and the first error.
func dialMany(cfg flow.ClientConfig, url string, n, conc int) ([]*flow.Session, int, error) {
	return dialConcurrent(n, conc, func(ctx context.Context) (*flow.Session, error) { return flow.Dial(ctx, url, cfg) })
}

// dialConcurrent makes n dials, conc at a time, each within dialTimeout,
// and returns what they dialled with the number that failed and the first
// error.
func dialConcurrent[T any](n, conc int, dial func(context.Context) (T, error)) ([]T, int, error) {
	var (
		next     atomic.Int64
		mu       sync.Mutex
		out      = make([]T, 0, n)
		failed   int
		firstErr error
		wg       sync.WaitGroup
	)
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
				s, err := dial(ctx)
				cancel()
				mu.Lock()
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					out = append(out, s)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out, failed, firstErr
}

// BenchmarkSessions: a server process (the test binary in its server role,
// flow.Server with mcp-flow-server's tools, on either core) takes a burst
// of 1,000 concurrent dials + initialize (CBOR): how many were refused or
// failed (the client does not retry a refusal here), sessions established
// per second, and the server's CPU time for them. A second server process
// then holds idleSessions() idle sessions, dialled 32 at a time: its heap
// in use after GC, measured in the server process alone, is divided by
// the sessions it holds (a process of its own, so that what the burst left
// behind, such as the goroutine records Go keeps once made, does not count
// as held by idle sessions), and a heap profile says where it goes
// (written for benchreport beside the latency series). A third process,
// the "bareserver" role (bareServerRole), then holds as many bare
// webtransport-go sessions, dialled the same way and measured the same
// way, first without a stream (KiB-heap/bare-nostream-session), then each
// with one bidirectional stream read at both ends
// (KiB-heap/bare-stream-session, the fair equivalent); MCP-Flow's own
// share of an idle session, KiB-own-live/session, is the live heap it
// holds beyond the latter (doc.go says why), and KiB-own-profile/session
// what its heap profile attributes to MCP-Flow's code.
func BenchmarkSessions(b *testing.B) {
	n := idleSessions()
	for b.Loop() {
		srv := startServer(b, -1, burstDials+16)
		cfg, closeDialer := sharedDialer(b, srv.tlsFor(b))
		c0 := cpuTime(srv.cmd.Process.Pid) - cpuTime(0)
		t0 := time.Now()
		burst, refused, berr := dialMany(cfg, srv.url, burstDials, burstDials)
		burstTime := time.Since(t0)
		burstCPU := cpuTime(srv.cmd.Process.Pid) - cpuTime(0) - c0
		if refused > 0 {
			b.Logf("burst: %d of %d dials failed, first: %v", refused, burstDials, berr)
		}
		closeAll(burst)
		closeDialer()
		srv.stop(b)

		srv = startServer(b, -1, n+16, "MCP_FLOW_BENCH_MEMPROFILERATE="+strconv.Itoa(sessionsProfileRate))
		cfg, closeDialer = sharedDialer(b, srv.tlsFor(b))
		m0 := srv.heap(b)
		tmp := b.TempDir()
		own0 := profiledOwn(b, srv, filepath.Join(tmp, "before.prof"))
		t1 := time.Now()
		idle, failed, err := dialMany(cfg, srv.url, n, 32)
		dialTime := time.Since(t1)
		if failed > 0 {
			b.Logf("%d of %d idle sessions failed, first: %v", failed, n, err)
		}
		m1 := srv.heap(b)
		held := m1.sessions
		per := func(a, b uint64) float64 { return float64(int64(a)-int64(b)) / float64(held) / 1024 }
		flowHeap := per(m1.heapInuse, m0.heapInuse)
		b.ReportMetric(flowHeap, "KiB-heap/session")
		flowLive := per(m1.live, m0.live)
		b.ReportMetric(flowLive, "KiB-live/session")
		b.ReportMetric(per(m1.stacks, m0.stacks), "KiB-stacks/session")
		b.ReportMetric(float64(m1.goroutines-m0.goroutines)/float64(held), "goroutines/session")
		b.ReportMetric(float64(held), "sessions")
		b.ReportMetric(float64(n), "sessions-asked")
		reportLoad(b)
		b.ReportMetric(float64(len(idle))/dialTime.Seconds(), "idle-dials/s")
		b.ReportMetric(float64(len(burst))/burstTime.Seconds(), "burst-sessions/s")
		b.ReportMetric(burstTime.Seconds(), "burst-s")
		b.ReportMetric(burstCPU.Seconds()/float64(burstDials)*1e3, "burst-server-cpu-ms/dial")
		b.ReportMetric(float64(refused), "burst-refused")
		b.ReportMetric(dialTimeout.Seconds(), "dial-timeout-s")
		b.ReportMetric(float64(failed), "idle-failed")
		// What the heap profile attributes to MCP-Flow's code (reported).
		b.ReportMetric((profiledOwn(b, srv, filepath.Join(tmp, "after.prof"))-own0)/float64(held), "KiB-own-profile/session")
		heapTop(b, srv, held)
		closeAll(idle)
		closeDialer()
		srv.stop(b)

		// The baselines, measured the same way: bare webtransport-go
		// sessions held idle by a server process of its own, first
		// without a stream, then each with one bidirectional stream that
		// both sides read (the fair equivalent: an idle MCP-Flow session
		// holds its control stream so).
		bare := startRole(b, "bareserver", -1, "MCP_FLOW_BENCH_MEMPROFILERATE="+strconv.Itoa(sessionsProfileRate))
		cfg, closeDialer = sharedDialer(b, bare.tlsFor(b))
		m0 = bare.heap(b)
		bs, bfailed, err := dialBareMany(cfg.Transport, bare.url, n, 32)
		if bfailed > 0 {
			b.Logf("%d of %d bare sessions failed, first: %v", bfailed, n, err)
		}
		bm := bare.heap(b)
		bheld := bm.sessions
		bper := func(a, b uint64) float64 { return float64(int64(a)-int64(b)) / float64(bheld) / 1024 }
		b.ReportMetric(bper(bm.heapInuse, m0.heapInuse), "KiB-heap/bare-nostream-session")
		b.ReportMetric(bper(bm.live, m0.live), "KiB-live/bare-nostream-session")
		b.ReportMetric(bper(bm.stacks, m0.stacks), "KiB-stacks/bare-nostream-session")
		b.ReportMetric(float64(bm.goroutines-m0.goroutines)/float64(bheld), "goroutines/bare-nostream-session")
		b.ReportMetric(float64(bheld), "bare-nostream-sessions")
		if _, err := io.WriteString(bare.stdin, "accept\n"); err != nil {
			b.Fatal(err)
		}
		if !bare.lines.Scan() || bare.lines.Text() != "accepting" {
			b.Fatalf("the bare server did not start accepting streams; stderr:\n%s", bare.stderr)
		}
		var readers sync.WaitGroup
		sfailed, err := openBareStreams(bs, 32, &readers)
		if sfailed > 0 {
			b.Logf("%d of %d bare sessions' streams failed, first: %v", sfailed, len(bs), err)
		}
		bm = bare.heap(b)
		bheld = bm.sessions // those whose stream echoed and is held
		bareHeap := bper(bm.heapInuse, m0.heapInuse)
		b.ReportMetric(bareHeap, "KiB-heap/bare-stream-session")
		bareLive := bper(bm.live, m0.live)
		b.ReportMetric(bareLive, "KiB-live/bare-stream-session")
		b.ReportMetric(bper(bm.stacks, m0.stacks), "KiB-stacks/bare-stream-session")
		b.ReportMetric(float64(bm.goroutines-m0.goroutines)/float64(bheld), "goroutines/bare-stream-session")
		b.ReportMetric(float64(bheld), "bare-stream-sessions")
		b.ReportMetric(float64(bfailed+sfailed), "bare-failed")
		// MCP-Flow's own share (judged): the live heap its idle session
		// holds beyond the bare session with a stream, whoever allocated
		// it (doc.go says why live, and why the difference).
		b.ReportMetric(flowLive-bareLive, "KiB-own-live/session")
		if dir := os.Getenv("MCP_FLOW_BENCH_SERIES"); dir != "" && bheld > 0 {
			// For pprof -diff_base against BenchmarkSessions.heap.prof.
			bare.profile(b, filepath.Join(dir, "BenchmarkSessions.bare.heap.prof"))
		}
		closeBare(bs)
		readers.Wait()
		closeDialer()
		bare.stop(b)
	}
}

// sessionsProfileRate is runtime.MemProfileRate in BenchmarkSessions'
// idle server processes: a sample every 4 KiB allocated on average, not
// every 512 KiB, so that the heap profile sees MCP-Flow's few hundred
// bytes per session (KiB-own-profile/session) in thousands of samples.
// The profile's records are not heap: HeapInuse and HeapAlloc do not
// count them.
const sessionsProfileRate = 4096

// profiledOwn has srv write a heap profile to path and returns the in-use
// space it attributes to MCP-Flow's own code (heapOwner: the code nearest
// the allocation, past the runtime and the standard library's containers,
// is a package of module github.com/mcp-flow/mcp-flow), in KiB.
func profiledOwn(b *testing.B, srv *serverProc, path string) float64 {
	srv.profile(b, path)
	out, err := exec.Command("go", "tool", "pprof", "-traces", "-sample_index=inuse_space", path).CombinedOutput()
	if err != nil {
		b.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	return heapOwners(string(out))["MCP-Flow (flow, wire)"]
}

// closeAll closes the sessions, concurrently.
func closeAll(ss []*flow.Session) {
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Go(func() { s.Close() })
	}
	wg.Wait()
}
