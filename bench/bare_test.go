package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// bareServerRole is BenchmarkSessions' baseline: a webtransport.Server on
// HTTP/3 (webtransport-go's own accept loop, Server.Serve) that accepts
// sessions at flow.DefaultPath and holds them idle, in two steps. First
// nothing else: no stream, no goroutine of its own per session (the
// stream-less bare session). Then, once stdin says "accept" (it answers
// "accepting"), a goroutine per session accepts one bidirectional stream,
// echoes its first byte and stays blocked in Read on it, 1 byte at a
// time: the least that any protocol with a control stream on WebTransport
// holds (the bare session with a stream, which dialBareMany's client side
// matches). Its QUIC settings are the ones an MCP-Flow server gives
// quic-go for an idle session (datagrams, partial resets, the idle timeout
// and keep-alive period, 100 streams of each kind), so that what the two
// differ by is MCP-Flow's own. It prints "url: …" and "hash: …" and
// answers stdin as serverRole does; the sessions it says it holds are
// those alive, and after "accept" those whose stream echoed and is held.
func bareServerRole() int {
	if r, err := strconv.Atoi(os.Getenv("MCP_FLOW_BENCH_MEMPROFILERATE")); err == nil {
		runtime.MemProfileRate = r
	}
	h3 := &http3.Server{TLSConfig: http3.ConfigureTLSConfig(certs.ServerTLSConfig(flowtest.Cert)), QUICConfig: &quic.Config{
		EnableDatagrams: true, EnableStreamResetPartialDelivery: true,
		MaxIdleTimeout: flow.DefaultPeerIdleTimeout, KeepAlivePeriod: flow.DefaultKeepAlivePeriod,
		MaxIncomingStreams: 100, MaxIncomingUniStreams: 100}}
	webtransport.ConfigureHTTP3Server(h3)
	ws := &webtransport.Server{H3: h3, CheckOrigin: func(*http.Request) bool { return true }}
	var (
		mu        sync.Mutex
		held      []*webtransport.Session // a slice: no per-session callback to count the live ones
		accepting bool
		streamed  atomic.Int64
		readers   sync.WaitGroup
	)
	hold := func(s *webtransport.Session) {
		readers.Go(func() {
			str, err := s.AcceptStream(s.Context())
			if err != nil {
				return
			}
			var buf [1]byte
			if _, err := io.ReadFull(str, buf[:]); err != nil {
				return
			}
			if _, err := str.Write(buf[:]); err != nil {
				return
			}
			streamed.Add(1)
			defer streamed.Add(-1)
			for {
				if _, err := str.Read(buf[:]); err != nil {
					return
				}
			}
		})
	}
	mux := http.NewServeMux()
	mux.HandleFunc(flow.DefaultPath, func(w http.ResponseWriter, r *http.Request) {
		s, err := ws.Upgrade(w, r)
		if err != nil {
			return
		}
		mu.Lock()
		held = append(held, s)
		if accepting {
			hold(s)
		}
		mu.Unlock()
	})
	h3.Handler = mux
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		log.Print(err)
		return 1
	}
	served := make(chan error, 1)
	go func() { served <- ws.Serve(pc) }()
	defer func() {
		ws.Close()
		pc.Close()
		<-served
		readers.Wait()
	}()
	// "accept" is this role's own command; the rest go to serveStdin
	// through a pipe that stands in for stdin.
	pr, pw, err := os.Pipe()
	if err != nil {
		log.Print(err)
		return 1
	}
	stdin := os.Stdin
	os.Stdin = pr
	go func() {
		defer pw.Close()
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			if sc.Text() == "accept" {
				mu.Lock()
				accepting = true
				for _, s := range held {
					hold(s)
				}
				mu.Unlock()
				fmt.Println("accepting")
				continue
			}
			if _, err := pw.Write(append(sc.Bytes(), '\n')); err != nil {
				return
			}
		}
	}()
	fmt.Printf("url: https://%s%s\nhash: %s\n", pc.LocalAddr(), flow.DefaultPath, flowtest.Cert.HashHex())
	return serveStdin(func() int {
		mu.Lock()
		defer mu.Unlock()
		if accepting {
			return int(streamed.Load())
		}
		n := 0
		for _, s := range held {
			if s.Context().Err() == nil {
				n++
			}
		}
		return n
	})
}

// dialBareMany dials n bare WebTransport sessions with d, conc at a time
// (dialMany's, without MCP-Flow: no control stream, no initialize), and
// returns them with the number of dials that failed and the first error.
func dialBareMany(d flow.WebTransportDialer, url string, n, conc int) ([]*webtransport.Session, int, error) {
	return dialConcurrent(n, conc, func(ctx context.Context) (*webtransport.Session, error) {
		_, s, err := d.Dial(ctx, url, nil)
		return s, err
	})
}

// openBareStreams gives each of ss the bare session's control stream, the
// client's side of bareServerRole's: it opens a bidirectional stream,
// writes a byte, reads its echo, and leaves a goroutine blocked in Read on
// the stream until the session ends (readers waits for them), conc
// sessions at a time. It returns how many failed and the first error.
func openBareStreams(ss []*webtransport.Session, conc int, readers *sync.WaitGroup) (int, error) {
	var (
		next     atomic.Int64
		mu       sync.Mutex
		failed   int
		firstErr error
		wg       sync.WaitGroup
	)
	for range conc {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(ss)); i = next.Add(1) - 1 {
				err := openBareStream(ss[i], readers)
				if err != nil {
					mu.Lock()
					failed++
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return failed, firstErr
}

func openBareStream(s *webtransport.Session, readers *sync.WaitGroup) error {
	str, err := s.OpenStream()
	if err != nil {
		return err
	}
	var buf [1]byte
	if _, err := str.Write([]byte{'c'}); err != nil {
		return err
	}
	if _, err := io.ReadFull(str, buf[:]); err != nil {
		return err
	}
	readers.Go(func() {
		for {
			if _, err := str.Read(buf[:]); err != nil {
				return
			}
		}
	})
	return nil
}

// closeBare closes bare sessions, concurrently.
func closeBare(ss []*webtransport.Session) {
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Go(func() { s.CloseWithError(0, "") })
	}
	wg.Wait()
}

// bareHOL is BenchmarkHeadOfLine's bare webtransport-go peer: pings of 64
// bytes echoed on one stream of a session (pipelined: an open loop sends
// on schedule whatever the answers, and the answers come back in order),
// while Fetch takes the bulk on another stream of the same session.
type bareHOL struct {
	r       *rawTarget
	wmu     sync.Mutex
	waiters chan chan error // in the order the pings were written
	done    chan struct{}
}

// dialBareHOL serves and dials the bare stack in this process (rawWTServe)
// and returns the target with a probe of the UDP sockets of its server and
// its client (dialProbed's).
func dialBareHOL(b testing.TB) (*bareHOL, *udpProbe) {
	s0, _ := socketInodes(os.Getpid())
	url, stop := rawWTServe(b)
	s1, _ := socketInodes(os.Getpid())
	// Kept alive as MCP-Flow's sessions are (it waits, dialled, while the
	// other peers run: quic-go's 30 s idle timeout would end it).
	qc := quicConf()
	qc.KeepAlivePeriod = flow.DefaultKeepAlivePeriod
	r := rawWTDial(b, url, stop, qc)
	s2, _ := socketInodes(os.Getpid())
	p := probeBetween(s0, s1, s2)
	t := &bareHOL{r: r, waiters: make(chan chan error, 1<<16), done: make(chan struct{})}
	go t.readAnswers()
	return t, p
}

// readAnswers reads the echoed pings in order and wakes their senders.
func (t *bareHOL) readAnswers() {
	defer close(t.done)
	var buf [64]byte
	for w := range t.waiters {
		_, err := io.ReadFull(t.r.ping, buf[:])
		w <- err
		if err != nil {
			for w := range t.waiters {
				w <- err
			}
			return
		}
	}
}

// Ping writes a ping and waits for its echo.
func (t *bareHOL) Ping(ctx context.Context) error {
	var req [64]byte
	req[0] = 'p'
	w := make(chan error, 1)
	t.wmu.Lock()
	_, err := t.r.ping.Write(req[:])
	if err == nil {
		t.waiters <- w
	}
	t.wmu.Unlock()
	if err != nil {
		return err
	}
	select {
	case err := <-w:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Echo is not part of the head-of-line workload.
func (t *bareHOL) Echo(context.Context, string) error {
	return errors.New("bare webtransport-go: no echo tool")
}

// Fetch takes n bytes on a stream of their own (the server's 256 KiB writes).
func (t *bareHOL) Fetch(_ context.Context, n int64) (int64, error) { return t.r.Fetch(n) }

// Close closes the session and the server, and ends readAnswers.
func (t *bareHOL) Close() {
	t.r.close()
	t.wmu.Lock()
	close(t.waiters)
	t.wmu.Unlock()
	<-t.done
}
