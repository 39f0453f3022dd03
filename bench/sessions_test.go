package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
			HandshakeIdleTimeout: 30 * time.Second, MaxIdleTimeout: flow.DefaultPeerIdleTimeout, KeepAlivePeriod: flow.DefaultKeepAlivePeriod},
		DialAddr: func(ctx context.Context, addr string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			ua, err := net.ResolveUDPAddr("udp", addr)
			if err != nil {
				return nil, err
			}
			return qt.DialEarly(ctx, ua, tc, qc)
		},
	}
	cfg.RefusedRetries = -1 // a refusal is a failure here
	cfg.Limits.HandshakeTimeout = 60 * time.Second
	return cfg, func() { qt.Close(); pc.Close() }
}

// dialMany dials n sessions, conc at a time, and returns them with the
// number of dials that failed and the first error.
func dialMany(cfg flow.ClientConfig, url string, n, conc int) ([]*flow.Session, int, error) {
	var (
		next     atomic.Int64
		mu       sync.Mutex
		out      = make([]*flow.Session, 0, n)
		failed   int
		firstErr error
		wg       sync.WaitGroup
	)
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				s, err := flow.Dial(ctx, url, cfg)
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
// flow.Server with mcp-flow-server's tools, on either core) first takes a
// burst of 1,000 concurrent dials + initialize (CBOR): how many were
// refused or failed (the client does not retry a refusal here), and
// sessions established per second. Then it holds idleSessions() idle
// sessions (the burst's, and more dialled 32 at a time); its heap in use
// after GC, measured in the server process alone, is divided by the
// sessions it holds, and a heap profile says where it goes (written for
// benchreport beside the latency series).
func BenchmarkSessions(b *testing.B) {
	n := idleSessions()
	for b.Loop() {
		srv := startServer(b, -1, n+16)
		cfg, closeDialer := sharedDialer(b, srv.tlsFor(b))
		h0, _ := srv.heap(b)
		t0 := time.Now()
		burst, refused, berr := dialMany(cfg, srv.url, burstDials, burstDials)
		burstTime := time.Since(t0)
		if refused > 0 {
			b.Logf("burst: %d of %d dials failed, first: %v", refused, burstDials, berr)
		}
		t1 := time.Now()
		idle, failed, err := dialMany(cfg, srv.url, n-len(burst), 32)
		dialTime := time.Since(t1)
		if failed > 0 {
			b.Logf("%d of %d idle sessions failed, first: %v", failed, n-len(burst), err)
		}
		h1, held := srv.heap(b)
		b.ReportMetric(float64(int64(h1)-int64(h0))/float64(held)/1024, "KiB-heap/session")
		b.ReportMetric(float64(held), "sessions")
		b.ReportMetric(float64(n), "sessions-asked")
		reportLoad(b)
		b.ReportMetric(float64(len(idle))/dialTime.Seconds(), "idle-dials/s")
		b.ReportMetric(float64(len(burst))/burstTime.Seconds(), "burst-sessions/s")
		b.ReportMetric(float64(refused), "burst-refused")
		b.ReportMetric(float64(failed), "idle-failed")
		heapTop(b, srv, held)
		var wg sync.WaitGroup
		for _, s := range append(idle, burst...) {
			wg.Go(func() { s.Close() })
		}
		wg.Wait()
		closeDialer()
	}
}

// heapTop writes the server's heap profile's top functions (in-use space,
// flat, KiB per session) to MCP_FLOW_BENCH_SERIES/BenchmarkSessions.heap.
func heapTop(b *testing.B, srv *serverProc, sessions int) {
	dir := os.Getenv("MCP_FLOW_BENCH_SERIES")
	if dir == "" || sessions == 0 {
		return
	}
	prof := filepath.Join(b.TempDir(), "heap.prof")
	srv.profile(b, prof)
	out, err := exec.Command("go", "tool", "pprof", "-top", "-sample_index=inuse_space", "-nodecount=12", prof).CombinedOutput()
	if err != nil {
		b.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	var sb strings.Builder
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasSuffix(f[1], "%") {
			continue
		}
		kib, ok := parseSize(f[0])
		if !ok {
			continue
		}
		fmt.Fprintf(&sb, "%.2f %s\n", kib/float64(sessions), strings.Join(f[5:], " "))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "BenchmarkSessions.heap"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

// parseSize reads pprof's sizes ("12.50MB", "512kB", "64B") in KiB.
func parseSize(s string) (float64, bool) {
	for _, u := range []struct {
		suffix string
		kib    float64
	}{{"GB", 1 << 20}, {"MB", 1 << 10}, {"kB", 1}, {"B", 1.0 / 1024}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f * u.kib, err == nil
		}
	}
	return 0, false
}
