package flow_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"

	"github.com/mcp-flow/mcp-flow/flow"
)

// freshConn dials srv's QUIC and HTTP/3 (its handshake done, no request
// made) and waits until srv has accepted it.
func freshConn(ctx context.Context, t *testing.T, srv *flow.Server) *quic.Conn {
	t.Helper()
	tlsConf := clientTLS(t).Clone()
	tlsConf.NextProtos = []string{http3.NextProtoH3}
	qc, err := quic.DialAddr(ctx, srv.Addr().String(), tlsConf, &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qc.CloseWithError(0, "") })
	// Accepted once its handshake is done on the server's side: a few
	// milliseconds after the client's here.
	for flow.FreshConns(srv) != 1 {
		select {
		case <-ctx.Done():
			t.Fatalf("the server has %d fresh connections, want 1", flow.FreshConns(srv))
		case <-time.After(time.Millisecond):
		}
	}
	return qc
}

// TestShutdownAnswersFreshConnect: a connection whose handshake is done
// but whose WebTransport CONNECT has not come when the server's drain ends
// is not closed under it (Chromium's network service crashes so: fresh.go,
// docs/deploy.md "Fleet"): Shutdown waits for its CONNECT, which is
// refused with 503 as the server shuts down, and then closes.
func TestShutdownAnswersFreshConnect(t *testing.T) {
	t.Parallel()
	refused := make(chan string, 4)
	srv := startServer(t, func(c *flow.ServerConfig) {
		c.Hooks.Observe = func(e flow.Event) {
			if e.Kind == flow.EventRefused {
				refused <- e.Outcome
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard: the test takes about 20 ms here
	defer cancel()
	qc := freshConn(ctx, t, srv)
	waiting := make(chan int, 1)
	// The wait is the hang guard's, not FreshWait: a CONNECT sent on the
	// hook's word may take its time under load.
	flow.AwaitFreshHook(srv, 30*time.Second, func(n int) { waiting <- n })
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	select {
	case n := <-waiting:
		if n != 1 {
			t.Fatalf("Shutdown waits for %d fresh connections, want 1", n)
		}
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with a connection whose CONNECT had not come: it closed it under the client", err)
	}
	var tr webtransport.Transport
	defer tr.Close()
	cc, err := tr.NewClientConn(qc)
	if err != nil {
		t.Fatal(err)
	}
	rsp, _, err := cc.Dial(ctx, srv.URL(), nil)
	switch {
	case err == nil:
		t.Fatal("a CONNECT during Shutdown was accepted")
	case rsp != nil && rsp.StatusCode != http.StatusServiceUnavailable:
		t.Fatalf("a CONNECT during Shutdown: %s, want 503", rsp.Status)
	}
	if got := <-refused; got != "shutting-down" {
		t.Fatalf("the CONNECT was refused as %q, want shutting-down", got)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case <-qc.Context().Done(): // closed once answered
	case <-ctx.Done():
		t.Fatal("the connection was left open after Shutdown")
	}
}

// TestShutdownFreshWaitBounded: a connection that makes no request holds
// Shutdown for the wait (FreshWait, 200 ms here) and no longer; then it is
// closed.
func TestShutdownFreshWaitBounded(t *testing.T) {
	t.Parallel()
	srv := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard: the test takes about 200 ms here
	defer cancel()
	qc := freshConn(ctx, t, srv)
	const wait = 200 * time.Millisecond
	flow.AwaitFreshHook(srv, wait, nil)
	began := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if took := time.Since(began); took < wait {
		t.Fatalf("Shutdown took %v with a fresh connection open, want at least the wait %v", took, wait)
	}
	select {
	case <-qc.Context().Done():
	case <-ctx.Done():
		t.Fatal("the silent connection was left open after Shutdown")
	}
}
