//go:build linux

package upstream_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/mcp-flow/mcp-flow/bridge/internal/upstream"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func dialEra(t *testing.T, srv *flow.Server, version string) (context.Context, *flow.Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet,
		ProtocolVersion: version, Capabilities: json.RawMessage(`{"roots":{}}`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ctx, s
}

// TestUpstreamProbeTimeout: a 2025 upstream that never answers requests
// before initialize (the child ignores server/discover) holds a 2026-07-28
// session's first request for the probe timeout only, then is initialized
// (in the bridge's own name); the client's server/discover is answered from
// its initialize result (spec §10, "Eras"; §8).
func TestUpstreamProbeTimeout(t *testing.T) {
	const probe = 300 * time.Millisecond
	_, srv := childUpstream(t, "polite", upstream.StdioUpstreamConfig{ProbeTimeout: probe})
	ctx, s := dialEra(t, srv, protocol.MCP20260728)
	start := time.Now()
	r, err := s.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": "after the probe"}})
	took := time.Since(start)
	if err != nil || !json.Valid(r.Result) {
		t.Fatalf("echo: %v", err)
	}
	var res struct {
		Content []struct{ Text string }
	}
	if json.Unmarshal(r.Result, &res); len(res.Content) != 1 || res.Content[0].Text != "after the probe" || took < probe || took >= upstream.DefaultProbeTimeout {
		t.Fatalf("echo: %s after %v (the probe waits %v, not the default %v)", r.Result, took, probe, upstream.DefaultProbeTimeout)
	}
	// This session declares roots, which the 2025 upstream may ask for and a
	// 2026-07-28 session cannot carry: its own server/discover is refused
	// with -32022 (spec §10, "Eras"); one without that capability is
	// answered from the upstream's InitializeResult.
	_, err = s.Call(ctx, protocol.MethodDiscover, map[string]any{})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != protocol.CodeUnsupportedProtocolVersion || strings.Contains(string(je.Data), protocol.MCP20260728+`"]`) {
		t.Fatalf("server/discover with roots to a 2025 upstream: %v, want -32022 naming the 2025 revisions only", err)
	}
	d, err := s.Call(ctx, protocol.MethodDiscover, map[string]any{"_meta": map[string]any{protocol.MetaClientCapabilities: map[string]any{}}})
	if err != nil {
		t.Fatalf("server/discover without server-request capabilities: %v", err)
	}
	var disc struct {
		SupportedVersions []string
		Meta              map[string]struct{ Name string } `json:"_meta"`
	}
	if err != nil || json.Unmarshal(d.Result, &disc) != nil || disc.Meta[protocol.MetaServerInfo].Name != "child-polite" || len(disc.SupportedVersions) != 1 || disc.SupportedVersions[0] != protocol.MCP20260728 {
		t.Fatalf("server/discover: %v %s", err, d.Result)
	}
	t.Logf("first request after the %v probe: %v", probe, took)
}

// modernServer is a 2026-07-28-only Streamable HTTP server (transports
// 2026-07-28): it records every HTTP request, answers server/discover and
// tools/call, and for the tool "slow" opens an SSE stream, sends one
// progress notification and reports when the client closes the stream.
type modernServer struct {
	mu       sync.Mutex
	requests []recorded
	closed   chan string // ids of slow calls whose stream the client closed
}

type recorded struct {
	method, sessionID, version, mcpMethod, mcpName string
	body                                           map[string]json.RawMessage
}

func (m *modernServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var msg map[string]json.RawMessage
	_ = json.Unmarshal(b, &msg)
	m.mu.Lock()
	m.requests = append(m.requests, recorded{r.Method, r.Header.Get("Mcp-Session-Id"), r.Header.Get("Mcp-Protocol-Version"), r.Header.Get("Mcp-Method"), r.Header.Get("Mcp-Name"), msg})
	m.mu.Unlock()
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var method, name string
	var p struct {
		Name string `json:"name"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(msg["method"], &method)
	_ = json.Unmarshal(msg["params"], &p)
	name = p.Name
	id := string(msg["id"])
	if id == "" {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch {
	case method == "initialize":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}}`, id)
	case method == protocol.MethodDiscover:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern-go","version":"1"}}}}`, id)
	case method == "tools/call" && name == "slow":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":1}}\n\n", p.Meta.ProgressToken)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the client closes the stream: the cancellation
		m.closed <- id
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}],"resultType":"complete"}}`, id, name)
	}
}

// TestHTTPUpstreamModern: a 2025 MCP-Flow client through the HTTP upstream
// to a 2026-07-28-only server (spec §10, "Eras"): initialize is refused
// (-32022, no HTTP+SSE fallback) and answered from server/discover; every
// request is its own POST with MCP-Protocol-Version 2026-07-28, Mcp-Method
// and Mcp-Name (Base64 sentinel for a non-ASCII name), no session id, and
// the client's capabilities in _meta; a cancelled request's stream is closed
// and nothing else is sent; no GET, no DELETE.
func TestHTTPUpstreamModern(t *testing.T) {
	ms := &modernServer{closed: make(chan string, 1)}
	hs := httptest.NewServer(ms)
	t.Cleanup(hs.Close)
	up := upstream.NewHTTPUpstream(upstream.HTTPUpstreamConfig{Endpoint: hs.URL, Logger: flowtest.Quiet})
	scfg := flow.ServerConfig{Logger: flowtest.Quiet}
	up.Configure(&scfg)
	srv := flowtest.Serve(t, scfg)
	ctx, s := dialEra(t, srv, protocol.MCP20251125)
	if got := s.InitializeResult(); got.ServerInfo.Name != "modern-go" || got.ProtocolVersion != protocol.MCP20251125 {
		t.Fatalf("initialize answered %+v, want modern-go's server/discover as 2025-11-25", got)
	}
	const name = "ünï tool"
	if r, err := s.Call(ctx, "tools/call", map[string]any{"name": name}); err != nil || !json.Valid(r.Result) {
		t.Fatalf("tools/call: %v", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	_, err := s.Call(sctx, "tools/call", map[string]any{"name": "slow"}, flow.WithProgress(func(flow.Progress) { cancel() }))
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("slow: %v, want context.Canceled", err)
	}
	select {
	case <-ms.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's stream of the cancelled request was not closed")
	}
	s.Close()
	srv.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := up.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	var methods []string
	for _, r := range ms.requests {
		var m string
		_ = json.Unmarshal(r.body["method"], &m)
		methods = append(methods, r.method+" "+m)
		if r.method != http.MethodPost || r.body["id"] == nil {
			t.Errorf("%s %s: a 2026-07-28 server gets request POSTs only", r.method, m)
		}
		if m == "initialize" {
			continue
		}
		if r.sessionID != "" || r.version != protocol.MCP20260728 || r.mcpMethod != m {
			t.Errorf("%s: Mcp-Session-Id %q, MCP-Protocol-Version %q, Mcp-Method %q", m, r.sessionID, r.version, r.mcpMethod)
		}
		var meta map[string]json.RawMessage
		var p struct {
			Name string
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(r.body["params"], &p)
		meta = p.Meta
		if string(meta[protocol.MetaProtocolVersion]) != `"2026-07-28"` || string(meta[protocol.MetaClientCapabilities]) != `{"roots":{}}` {
			t.Errorf("%s: _meta %v, want the version and the session's capabilities", m, meta)
		}
		want := ""
		switch p.Name {
		case name:
			want = "=?base64?" + base64.StdEncoding.EncodeToString([]byte(name)) + "?="
		case "slow":
			want = "slow"
		}
		if r.mcpName != want {
			t.Errorf("%s %q: Mcp-Name %q, want %q", m, p.Name, r.mcpName, want)
		}
	}
	t.Logf("the upstream saw: %q", methods)
}

// TestUpstream2025InitializeInBridgesName: a 2025-only upstream (the
// go-sdk's Streamable HTTP server) reached by a 2026-07-28 session whose
// requests come from two clients (as a front's stateless path sends them)
// is initialized, once, in the bridge's own name with empty capabilities:
// neither client's clientInfo or clientCapabilities (the first's sampling
// included) goes upstream, in initialize, the server/discover probe or the
// requests (spec §10, "Eras"; §11.6).
func TestUpstream2025InitializeInBridgesName(t *testing.T) {
	sdk := sdkfixture.NewServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdk }, nil)
	var mu sync.Mutex
	var bodies []string
	var inits []json.RawMessage
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct {
			Method string
			Params json.RawMessage
		}
		_ = json.Unmarshal(b, &m)
		mu.Lock()
		bodies = append(bodies, string(b))
		if m.Method == protocol.MethodInitialize {
			inits = append(inits, m.Params)
		}
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	scfg := flow.ServerConfig{Logger: flowtest.Quiet}
	upstream.NewHTTPUpstream(upstream.HTTPUpstreamConfig{Endpoint: hs.URL, Logger: flowtest.Quiet}).Configure(&scfg)
	srv := flowtest.Serve(t, scfg)
	ctx, s := dialEra(t, srv, protocol.MCP20260728)
	clients := []struct{ name, caps string }{{"first-client", `{"sampling":{},"roots":{}}`}, {"second-client", `{"elicitation":{}}`}}
	for _, c := range clients {
		meta := map[string]json.RawMessage{
			"io.modelcontextprotocol/clientInfo": json.RawMessage(`{"name":"` + c.name + `","version":"9"}`),
			protocol.MetaClientCapabilities:      json.RawMessage(c.caps),
		}
		r, err := s.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": "hi"}, "_meta": meta})
		var res struct{ Content []struct{ Text string } }
		if err != nil || json.Unmarshal(r.Result, &res) != nil || len(res.Content) != 1 || res.Content[0].Text != "hi" {
			t.Fatalf("echo for %s: %v", c.name, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(inits) != 1 {
		t.Fatalf("the upstream got %d initialize requests, want 1 for the session", len(inits))
	}
	var p struct {
		Capabilities json.RawMessage
		ClientInfo   struct{ Name, Version string }
	}
	if err := json.Unmarshal(inits[0], &p); err != nil || p.ClientInfo.Name != "mcp-flow-server" || p.ClientInfo.Version != protocol.VersionHello || string(p.Capabilities) != "{}" {
		t.Errorf("initialize params %s: want clientInfo mcp-flow-server %s and capabilities {}", inits[0], protocol.VersionHello)
	}
	for _, b := range bodies {
		if strings.Contains(b, clients[0].name) || strings.Contains(b, clients[1].name) || strings.Contains(b, `"sampling"`) || strings.Contains(b, `"elicitation"`) {
			t.Errorf("the upstream got a client's identity or capabilities: %s", b)
		}
	}
}
