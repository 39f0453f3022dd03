package flow_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/quic-go/quic-go"
)

// TestDialBurstNoRefusal dials 200 sessions at once with redials disabled:
// the server must accept them all without its QUIC accept queue (32)
// overflowing into CONNECTION_REFUSED (spec §8).
func TestDialBurstNoRefusal(t *testing.T) {
	n := 200
	if raceEnabled {
		n = 100 // the race detector slows each handshake ~10×
	}
	// The point is refusals: handshakes that queue behind 100-200 others on
	// a loaded machine (and under -race) may take longer than the default
	// 10 s, which is not what this test is about.
	const patient = 60 * time.Second
	srv := startServer(t, func(c *flow.ServerConfig) { c.Limits.HandshakeTimeout = patient })
	if r := dialBurst(t, srv, n, patient); r > 0 {
		t.Errorf("%d of %d dials refused with CONNECTION_REFUSED", r, n)
	}
}

// dialBurst dials n sessions to srv at once with redials disabled and
// pings on each; it returns how many dials were refused with
// CONNECTION_REFUSED, and fails t on any other error. patient is the
// handshake timeout, and half the time each dial and ping may take.
func dialBurst(t *testing.T, srv *flow.Server, n int, patient time.Duration) (refused int) {
	t.Helper()
	var nrefused atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), 2*patient)
			defer cancel()
			s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t), RefusedRetries: -1, Limits: flow.Limits{HandshakeTimeout: patient}})
			if err != nil {
				if isRefused(err) {
					nrefused.Add(1)
				} else {
					errs <- err
				}
				return
			}
			defer s.Close()
			if err := s.Ping(ctx); err != nil {
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return int(nrefused.Load())
}

// TestSparesTakeBurst: the spares alone (the one acceptor is held) take a
// burst of 100 handshakes, 68 more than quic-go's accept queue holds,
// with none refused, and each spare ends with the connection it took.
// Without the spares, 68 are refused and the queued 32 never served.
func TestSparesTakeBurst(t *testing.T) {
	hold := make(chan struct{})
	srv := acceptingServer(t, func(srv *flow.Server) { flow.SetAccepting(srv, 1, 256, time.Minute, hold) })
	t.Cleanup(func() { close(hold) }) // before the server's Close (cleanups run last first)
	const n = 100
	if r := dialBurst(t, srv, n, 60*time.Second); r > 0 {
		t.Errorf("%d of %d dials refused with CONNECTION_REFUSED", r, n)
	}
	waitSpares(t, srv, 0, 30*time.Second)
}

// TestSparesRetired: when an acceptor takes a connection a spare was
// started for, that acceptor ends a waiting spare, so that after each
// dial one goroutine fewer waits, not one more until spareIdle (seen:
// with the CLI's ten pings, eight spares still waited). Without retire,
// nine of ten spares still wait here.
func TestSparesRetired(t *testing.T) {
	srv := acceptingServer(t, func(srv *flow.Server) { flow.SetAccepting(srv, 8, 256, time.Hour, nil) })
	for range 10 {
		s, err := flow.Dial(t.Context(), srv.URL(), flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	waitSpares(t, srv, 0, 10*time.Second)
}

// TestSparesBoundedAndIdle: handshakes that fail before quic-go queues
// their connection (an ALPN the server does not speak) leave their spares
// waiting; no more than maxSpares wait, and each ends after spareIdle.
func TestSparesBoundedAndIdle(t *testing.T) {
	const idle = 2 * time.Second
	srv := acceptingServer(t, func(srv *flow.Server) { flow.SetAccepting(srv, 1, 3, idle, nil) })
	for range 5 {
		failHandshake(t, srv)
	}
	if n := flow.Spares(srv); n != 3 {
		t.Errorf("%d spares wait after 5 failed handshakes, want maxSpares, 3", n)
	}
	waitSpares(t, srv, 0, 15*idle)
}

// TestSparesEndWithServer: spares waiting when the server closes end
// before Serve returns (acceptingServer's cleanup checks Serve's return).
func TestSparesEndWithServer(t *testing.T) {
	served := make(chan error, 1)
	srv := newAcceptingServer(t, func(srv *flow.Server) { flow.SetAccepting(srv, 1, 256, time.Hour, nil) }, served)
	failHandshake(t, srv)
	failHandshake(t, srv)
	if n := flow.Spares(srv); n != 2 {
		t.Fatalf("%d spares wait after 2 failed handshakes, want 2", n)
	}
	srv.Close()
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve has not returned 30 s after Close")
	}
	if n := flow.Spares(srv); n != 0 {
		t.Errorf("%d spares still wait after Serve returned", n)
	}
}

// failHandshake starts a QUIC handshake with srv that fails before
// quic-go queues the connection: the client offers only an ALPN the
// server does not speak.
func failHandshake(t *testing.T, srv *flow.Server) {
	t.Helper()
	tc := clientTLS(t).Clone()
	tc.NextProtos = []string{"not-h3"}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, srv.Addr().String(), tc, nil)
	if err == nil {
		conn.CloseWithError(0, "")
		t.Fatal("a handshake offering ALPN not-h3 succeeded")
	}
	var te *quic.TransportError
	if !errors.As(err, &te) || !te.ErrorCode.IsCryptoError() {
		t.Fatalf("handshake offering ALPN not-h3: %v, want a TLS alert", err)
	}
}

// waitSpares waits up to d for srv's spares to number want.
func waitSpares(t *testing.T, srv *flow.Server, want int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for flow.Spares(srv) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d spares after %v, want %d", flow.Spares(srv), d, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// acceptingServer serves the test tools with set applied before Serve
// (flow.SetAccepting) and, at the test's end, closes it and checks that
// Serve returned http.ErrServerClosed.
func acceptingServer(t *testing.T, set func(*flow.Server)) *flow.Server {
	t.Helper()
	served := make(chan error, 1)
	srv := newAcceptingServer(t, set, served)
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv
}

// newAcceptingServer is acceptingServer leaving the close to the caller:
// Serve's return goes to served.
func newAcceptingServer(t *testing.T, set func(*flow.Server), served chan<- error) *flow.Server {
	t.Helper()
	mux, caps := flowtest.ToolsMux(t, demotools.Config{})
	srv, err := flow.NewServer(flow.ServerConfig{Addr: "127.0.0.1:0", TLSConfig: certs.ServerTLSConfig(testCert), Handler: mux, Capabilities: caps, Logger: testLogger(t),
		Limits: flow.Limits{HandshakeTimeout: 60 * time.Second}}) // a burst's handshakes queue behind each other
	if err != nil {
		t.Fatal(err)
	}
	set(srv)
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	go func() { served <- srv.Serve() }()
	return srv
}

// refusingServer serves the test tools and refuses the first n QUIC
// connections (all of them if n < 0) with CONNECTION_REFUSED; attempts
// counts the connections it was asked for (each dial comes from a port of
// its own). onAttempt, if set, runs on each.
func refusingServer(t *testing.T, n int32, onAttempt func()) (srv *flow.Server, attempts *atomic.Int32) {
	t.Helper()
	attempts = new(atomic.Int32)
	var mu sync.Mutex
	seen := map[string]bool{} // address → refused
	return acceptingServer(t, func(srv *flow.Server) {
		flow.RefuseConnections(srv, func(addr net.Addr) bool {
			mu.Lock()
			defer mu.Unlock()
			if r, ok := seen[addr.String()]; ok {
				return r // another Initial packet of the same connection
			}
			a := attempts.Add(1)
			if onAttempt != nil {
				onAttempt()
			}
			seen[addr.String()] = n < 0 || a <= n
			return seen[addr.String()]
		})
	}), attempts
}

func isRefused(err error) bool {
	var te *quic.TransportError
	return errors.As(err, &te) && te.ErrorCode == quic.ConnectionRefused
}

// TestDialRetriesRefused: Dial dials again after CONNECTION_REFUSED, as
// often as ClientConfig.RefusedRetries says, with growing waits, and stops
// when ctx ends.
func TestDialRetriesRefused(t *testing.T) {
	cfg := func(retries int) flow.ClientConfig {
		return flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t), RefusedRetries: retries}
	}
	t.Run("refused twice, then served", func(t *testing.T) {
		srv, attempts := refusingServer(t, 2, nil)
		s, err := flow.Dial(t.Context(), srv.URL(), cfg(0))
		if err != nil {
			t.Fatalf("Dial with the default retries: %v", err)
		}
		defer s.Close()
		if err := s.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
		if a := attempts.Load(); a != 3 {
			t.Errorf("%d connection attempts, want 3 (two refused, one served)", a)
		}
	})
	t.Run("no retries", func(t *testing.T) {
		srv, attempts := refusingServer(t, 1, nil)
		_, err := flow.Dial(t.Context(), srv.URL(), cfg(-1))
		if !isRefused(err) {
			t.Fatalf("Dial with RefusedRetries -1 = %v, want CONNECTION_REFUSED", err)
		}
		if a := attempts.Load(); a != 1 {
			t.Errorf("%d connection attempts, want 1", a)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		srv, attempts := refusingServer(t, -1, nil)
		start := time.Now()
		_, err := flow.Dial(t.Context(), srv.URL(), cfg(3))
		took := time.Since(start)
		if !isRefused(err) {
			t.Fatalf("Dial = %v, want CONNECTION_REFUSED", err)
		}
		if a := attempts.Load(); a != 4 {
			t.Errorf("%d connection attempts, want 4 (RefusedRetries 3)", a)
		}
		// The waits are 50, 100 and 200 ms less up to half each.
		if least := 175 * time.Millisecond; took < least {
			t.Errorf("three redials took %v, less than the %v of backoff", took, least)
		}
	})
	t.Run("ctx ends the waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		srv, attempts := refusingServer(t, -1, cancel)
		_, err := flow.Dial(ctx, srv.URL(), cfg(0))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Dial = %v, want context.Canceled", err)
		}
		if a := attempts.Load(); a != 1 {
			t.Errorf("%d connection attempts after ctx ended, want 1", a)
		}
	})
}

// TestSmallUDPBuffersLogged: a socket whose buffers the kernel kept below
// what quic-go wants gets one warning line in the server's log, naming the
// sizes and the sysctl; one at the size gets none.
func TestSmallUDPBuffersLogged(t *testing.T) {
	var logged strings.Builder
	srv, err := flow.NewServer(flow.ServerConfig{TLSConfig: certs.ServerTLSConfig(testCert), Handler: flow.Mux{},
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	udp := func(size int) *net.UDPConn {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.SetReadBuffer(size); err != nil {
			t.Fatal(err)
		}
		if err := c.SetWriteBuffer(size); err != nil {
			t.Fatal(err)
		}
		return c
	}
	flow.WarnSmallBuffers(srv, udp(64<<10))
	if n := strings.Count(logged.String(), "\n"); n != 1 || !strings.Contains(logged.String(), "level=WARN") ||
		!strings.Contains(logged.String(), "net.core.rmem_max") || !strings.Contains(logged.String(), "receiveKiB=128") {
		t.Fatalf("log for 64 KiB buffers (Linux doubles them to 128):\n%s", logged.String())
	}
	logged.Reset()
	// Linux doubles what it grants: with net.core.rmem_max and wmem_max at
	// 3.5 MiB or more, 7 MiB asked is 7 MiB or more reported.
	for _, f := range []string{"rmem_max", "wmem_max"} {
		b, err := os.ReadFile("/proc/sys/net/core/" + f)
		if n, perr := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || perr != nil || n < 7<<19 {
			t.Logf("net.core.%s is %q (%v): buffers at the size cannot be made here, so that case is not checked", f, b, err)
			return
		}
	}
	flow.WarnSmallBuffers(srv, udp(7<<20))
	if logged.Len() != 0 {
		t.Errorf("log for 7 MiB buffers:\n%s", logged.String())
	}
}
