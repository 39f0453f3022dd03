package flow_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// memPair is a client and a server session over an in-memory WebTransport
// session (flowtest.MemPair), for tests run inside synctest.Test.
func memPair(t *testing.T, srv func(*flow.ServerConfig), cli func(*flow.ClientConfig)) (client *flow.Session, server *flow.Server, serverSession *flow.Session) {
	t.Helper()
	mux, caps := flowtest.ToolsMux(t, demotools.Config{Root: t.TempDir()})
	sc := flow.ServerConfig{Handler: mux, Capabilities: caps, Info: flow.Implementation{Name: "test-server", Version: "1"}}
	if srv != nil {
		srv(&sc)
	}
	cc := flow.ClientConfig{Info: flow.Implementation{Name: "test-client", Version: "1"}, Logger: testLogger(t)}
	if cli != nil {
		cli(&cc)
	}
	return flowtest.MemPair(t, sc, cc)
}

// TestMemPair: a client and a server session over memwt inside a synctest
// bubble: a ping and a tool call are answered, and the session's close
// reaches the server's side.
func TestMemPair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _, s := memPair(t, nil, nil)
		if err := c.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := textOf(t, callTool(t, c, "echo", map[string]any{"text": "hi"})); got != "hi" {
			t.Fatalf("echo: %q", got)
		}
		c.Close()
		<-s.Done()
	})
}

// TestMemPairChecksOrigin: a CONNECT over memwt passes the server's Origin
// check as one over QUIC does (Server.ServeSession): a foreign Origin is
// refused with 403 before any session.
func TestMemPairChecksOrigin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := flowtest.MemServer(t, flow.ServerConfig{Logger: testLogger(t)})
		_, err := flow.Dial(t.Context(), flowtest.MemURL, flow.ClientConfig{
			Header:      http.Header{"Origin": {"https://elsewhere.example"}},
			DialSession: flowtest.MemDial(srv),
			Logger:      testLogger(t),
		})
		if err == nil || !strings.Contains(err.Error(), "403") {
			t.Fatalf("Dial from a foreign Origin: %v, want a 403 refusal", err)
		}
		if n := srv.Sessions(); n != 0 {
			t.Fatalf("%d sessions after a refused CONNECT", n)
		}
	})
}

// memRaw is a client that speaks MCP-Flow by hand over memwt, so that it
// can misbehave on purpose (rawPeer's twin, for synctest bubbles).
type memRaw struct {
	sess flow.WTSession
	ctrl flow.WTStream
}

// initMemRaw connects a memRaw to srv and completes initialize in JSON.
func initMemRaw(t *testing.T, srv *flow.Server) *memRaw {
	t.Helper()
	_, wts, err := flowtest.MemDial(srv)(t.Context(), flowtest.MemURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wts.CloseWithError(0, "") })
	ctrl, err := wts.OpenStreamSync(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	p := &memRaw{sess: wts, ctrl: ctrl}
	if _, err := ctrl.Write(frame(rawInitialize)); err != nil {
		t.Fatal(err)
	}
	var r struct{ Result *flow.InitializeResult }
	if b := readFrame(t, ctrl); json.Unmarshal(b, &r) != nil || r.Result == nil {
		t.Fatalf("initialize answered %s", b)
	}
	if _, err := ctrl.Write(frame(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatal(err)
	}
	return p
}

// memDial connects a client to srv over memwt (flowtest.MemDial); the
// test's cleanup closes it.
func memDial(t *testing.T, srv *flow.Server) *flow.Session {
	t.Helper()
	s, err := flow.Dial(t.Context(), flowtest.MemURL, flow.ClientConfig{
		DialSession: flowtest.MemDial(srv),
		Info:        flow.Implementation{Name: "test-client", Version: "1"},
		Logger:      testLogger(t),
	})
	if err != nil {
		t.Fatalf("Dial over memwt: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
