package flowtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/wtconn/memwt"
)

// MemURL is the URL a client of MemPair dials; nothing listens on it.
const MemURL = "https://memwt.invalid/mcp"

// MemPair runs a server with srv and dials it with cli over an in-memory
// WebTransport session (package wtconn/memwt): no socket and no timer but
// flow's own, so that it runs inside a testing/synctest bubble, where its
// timeouts pass on the fake clock. It returns the READY client session, the
// server and the server's session; the test's cleanup closes them. A failed
// Dial ends the test.
func MemPair(t testing.TB, srv flow.ServerConfig, cli flow.ClientConfig) (client *flow.Session, server *flow.Server, serverSession *flow.Session) {
	t.Helper()
	ready := make(chan *flow.Session, 1)
	inner := srv.OnSession
	srv.OnSession = func(s *flow.Session) {
		select {
		case ready <- s:
		default:
		}
		if inner != nil {
			inner(s)
		}
	}
	server = MemServer(t, srv)
	if cli.Logger == nil {
		cli.Logger = Logger()
	}
	cli.DialSession = MemDial(server)
	client, err := flow.Dial(context.Background(), MemURL, cli)
	if err != nil {
		t.Fatalf("Dial over memwt: %v", err)
	}
	t.Cleanup(func() { client.Close() })
	return client, server, <-ready
}

// MemServer returns a server with cfg that listens nowhere: its sessions
// come from MemDial. Empty fields get what Serve gives them; Addr and
// TLSConfig are unused but for NewServer's checks. The test's cleanup
// closes it.
func MemServer(t testing.TB, cfg flow.ServerConfig) *flow.Server {
	t.Helper()
	srv, err := flow.NewServer(serverDefaults(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// MemDial is a ClientConfig.DialSession that connects to srv over a new
// memwt pair. The CONNECT goes through Server.ServeSession, with its Origin,
// authorization and MaxSessions checks; a refusal fails the Dial with the
// response, as over QUIC.
func MemDial(srv *flow.Server) func(ctx context.Context, url string, h http.Header) (*http.Response, flow.WTSession, error) {
	return func(ctx context.Context, url string, h http.Header) (*http.Response, flow.WTSession, error) {
		c, s := memwt.Pair(memwt.Config{})
		r, err := http.NewRequestWithContext(ctx, http.MethodConnect, url, nil)
		if err != nil {
			return nil, nil, err
		}
		r.Header = h.Clone()
		if r.Header == nil {
			r.Header = http.Header{}
		}
		r.Proto, r.RemoteAddr = "webtransport", "memwt"
		w := httptest.NewRecorder()
		srv.ServeSession(w, r, func() (flow.WTSession, error) { return s, nil })
		resp := w.Result()
		if resp.StatusCode != http.StatusOK {
			return resp, nil, fmt.Errorf("memwt: the server refused the CONNECT with %d", resp.StatusCode)
		}
		return resp, c, nil
	}
}
