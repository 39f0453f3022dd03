// Over 400 lines: the HTTP front's end-to-end cases (go-sdk clients and raw
// requests, every era's status codes, resumption, limits) over one rig
// (httpFront, send) that other test files use too.

package bridge_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func httpFront(t *testing.T) *httptest.Server {
	t.Helper()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	h := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(),
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: flowtest.Quiet}})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { ts.CloseClientConnections(); h.Close(); ts.Close() }) // the front's sessions end with the test: none reconnects after it
	return ts
}

// TestGoSDKStreamableClientThroughHTTPFront: the go-sdk's Streamable HTTP
// client uses a remote MCP-Flow server through the HTTP front, in 2025-11-25
// (a session: every progress notification arrives) and in 2026-07-28, which
// the go-sdk v1.8 client chooses after its server/discover probe (one
// POST per request: a progress update not yet written when a newer one
// comes is replaced by it, never the last one, spec §11.6).
func TestGoSDKStreamableClientThroughHTTPFront(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2025-11-25", ""} {
		name := version
		if name == "" {
			name = "default (2026-07-28 after server/discover)"
		}
		t.Run(name, func(t *testing.T) {
			ts := httpFront(t)
			var mu sync.Mutex
			var seen []float64
			last := make(chan struct{})
			c := mcp.NewClient(&mcp.Implementation{Name: "http-host", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					seen = append(seen, r.Params.Progress)
					if r.Params.Progress == 3 {
						close(last)
					}
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			want := version
			if want == "" {
				want = "2026-07-28"
			}
			if v := cs.InitializeResult().ProtocolVersion; v != want {
				t.Fatalf("negotiated %s, want %s", v, want)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) < 5 {
				t.Fatalf("tools/list: %v", err)
			}
			generateInline(t, ctx, cs, 2<<20)
			params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]int{"steps": 3, "delayMs": 5}}
			params.SetProgressToken(42)
			if _, err := cs.CallTool(ctx, params); err != nil {
				t.Fatal(err)
			}
			select {
			case <-last:
			case <-ctx.Done():
				mu.Lock()
				t.Fatalf("slow, 3 steps: progress %v, never the last one (3)", seen)
			}
			if err := cs.Close(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if version != "" && len(seen) != 3 {
				t.Fatalf("slow, 3 steps, in a 2025 session: progress %v, want all three", seen)
			}
			for i := range seen {
				if i > 0 && seen[i] <= seen[i-1] {
					t.Fatalf("slow, 3 steps: progress %v, not increasing", seen)
				}
			}
		})
	}
}

func TestHTTPFrontStatusCodes(t *testing.T) {
	t.Parallel()
	ts := httpFront(t)
	do := func(method, body string, hdr map[string]string) *http.Response {
		req, _ := http.NewRequest(method, ts.URL, strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	if r := do("POST", ping, nil); r.StatusCode != http.StatusBadRequest {
		t.Errorf("no session id: %d, want 400", r.StatusCode)
	}
	if r := do("POST", ping, map[string]string{"MCP-Session-Id": "nope"}); r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: %d, want 404", r.StatusCode)
	}
	if r := do("POST", ping, map[string]string{"Origin": "https://evil.example"}); r.StatusCode != http.StatusForbidden {
		t.Errorf("bad origin: %d, want 403", r.StatusCode)
	}
	if r := do("POST", ping, map[string]string{"Host": "evil.example.com"}); r.StatusCode != http.StatusForbidden {
		t.Errorf("rebinding Host: %d, want 403", r.StatusCode)
	}
	if r := do("POST", ping, map[string]string{"Origin": "http://127.0.0.1:1234"}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("loopback origin: %d, want 400 (accepted, then no session id)", r.StatusCode)
	}
	if r := do("POST", ping, map[string]string{"MCP-Protocol-Version": "1999-01-01"}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("bad protocol version: %d, want 400", r.StatusCode)
	}
	init := do("POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	sid := init.Header.Get("MCP-Session-Id")
	if init.StatusCode != http.StatusOK || len(sid) < 16 {
		t.Fatalf("initialize: %d, session %q", init.StatusCode, sid)
	}
	if r := do("POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"MCP-Session-Id": sid}); r.StatusCode != http.StatusAccepted {
		t.Errorf("notification: %d, want 202", r.StatusCode)
	}
	if r := do("DELETE", "", map[string]string{"MCP-Session-Id": sid}); r.StatusCode != http.StatusNoContent {
		t.Errorf("delete: %d", r.StatusCode)
	}
	if r := do("POST", ping, map[string]string{"MCP-Session-Id": sid}); r.StatusCode != http.StatusNotFound {
		t.Errorf("after delete: %d, want 404", r.StatusCode)
	}
}

// TestHTTPFrontResumption: a client that loses a POST's SSE stream gets the
// rest of that stream, and only that, with GET and Last-Event-ID.
func TestHTTPFrontResumption(t *testing.T) {
	t.Parallel()
	ts := httpFront(t)
	post := func(sid, body string) *http.Response {
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		if sid != "" {
			req.Header.Set("MCP-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	init := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	init.Body.Close()
	sid := init.Header.Get("MCP-Session-Id")
	// A call with progress; read its first event, then drop the connection.
	resp := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"steps":3,"delayMs":50},"_meta":{"progressToken":"p"}}}`)
	br := bufio.NewReader(resp.Body)
	var head string
	for !strings.Contains(head, "id: 1.1\n") {
		line, err := br.ReadString('\n')
		if err != nil || len(head) > 1<<10 {
			t.Fatalf("no event 1.1 after the priming event 1.0: %q, %v", head, err)
		}
		head += line
	}
	if !strings.HasPrefix(head, "id: 1.0\ndata: \n\n") {
		t.Fatalf("the stream starts %q, want the priming event 1.0", head)
	}
	resp.Body.Close()
	// Another stream meanwhile: its events must not be replayed below.
	other := post(sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	ob, _ := io.ReadAll(other.Body)
	if !strings.Contains(string(ob), "id: 2.1") {
		t.Fatalf("second stream: %s", ob)
	}
	req, _ := http.NewRequest("GET", ts.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Session-Id", sid)
	req.Header.Set("Last-Event-ID", "1.1")
	g, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(g.Body)
	g.Body.Close()
	s := string(rest)
	if !strings.Contains(s, "id: 1.2") || !strings.Contains(s, `"id":2,"result"`) || strings.Contains(s, "id: 1.1\n") || strings.Contains(s, `"id":3`) {
		t.Fatalf("replay after 1.1:\n%s", s)
	}
}

// TestHTTPFrontBatchesByVersion: a POSTed batch is answered in a 2025-03-26
// session (its responses on the POST's SSE stream) and refused whole with
// 400 and a -32600 error in a 2025-11-25 session.
func TestHTTPFrontBatchesByVersion(t *testing.T) {
	t.Parallel()
	ts := httpFront(t)
	post := func(sid, version, body string) (*http.Response, string) {
		if sid == "" {
			return send(t, ts.URL, "POST", body, nil)
		}
		return send(t, ts.URL, "POST", body, map[string]string{"MCP-Session-Id": sid, "MCP-Protocol-Version": version})
	}
	batch := `[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"一"}}},` +
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},` +
		`{"jsonrpc":"2.0","id":"b","method":"ping"}]`
	for _, v := range []string{"2025-03-26", "2025-11-25"} {
		init, _ := post("", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		sid := init.Header.Get("MCP-Session-Id")
		resp, body := post(sid, v, batch)
		if v == "2025-03-26" {
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":"a","result"`) || !strings.Contains(body, "一") || !strings.Contains(body, `"id":"b","result":{}`) {
				t.Errorf("%s: batch answer %d:\n%s", v, resp.StatusCode, body)
			}
			continue
		}
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"code":-32600`) || !strings.Contains(body, v) {
			t.Errorf("%s: batch answer %d: %s", v, resp.StatusCode, body)
		}
		if resp, body := post(sid, v, `{"jsonrpc":"2.0","id":7,"method":"ping"}`); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":7`) {
			t.Errorf("%s: the session after a refused batch: %d %s", v, resp.StatusCode, body)
		}
	}
}

// TestHTTPFrontLimits crosses each of the front's limits: MaxSessions (503
// with Retry-After, and room again after a DELETE), MaxBody (413), and
// IdleTimeout (the idle session's id gets 404; a busy one lives on).
func TestHTTPFrontLimits(t *testing.T) {
	t.Parallel()
	// A "hold" tool that runs until the test releases it keeps a session
	// busy for as long as the test needs, whatever the load.
	mux, caps := flowtest.ToolsMux(t, demotools.Config{Root: t.TempDir()})
	holding, release := make(chan struct{}, 1), make(chan struct{})
	tools := mux["tools/call"]
	mux["tools/call"] = flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		var p struct{ Name string }
		if json.Unmarshal(req.Params, &p); p.Name != "hold" {
			return tools.HandleRequest(ctx, req)
		}
		holding <- struct{}{}
		select {
		case <-release:
			return map[string]any{"content": []any{}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet, Handler: mux, Capabilities: caps})
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	// The front logs "HTTP session ended" with why=idle when its idle timer
	// ends a session: the test waits for that record, not for a time.
	ends := make(chan map[string]string, 8)
	// The steps between two requests of session a (two sessions opened,
	// one refused, one deleted, a call held) must take less than idle, or a
	// idles out before the test has used it: touchA logs each gap. The
	// longest, 180 ms under -race at load 12 (2026-12-06), once passed 1 s
	// (a's big POST got 404) in the parallel race build beside other work.
	const idle = 5 * time.Second
	lastA := time.Now()
	touchA := func(step string) {
		t.Logf("session a: %s, %v after its previous request", step, time.Since(lastA).Round(time.Millisecond))
		lastA = time.Now()
	}
	h := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(),
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: slog.New(recordHandler{ch: ends, only: "HTTP session ended"})},
		MaxSessions: 2, MaxBody: 4096, IdleTimeout: idle})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { ts.CloseClientConnections(); h.Close(); ts.Close() }) // the front's sessions end with the test: none reconnects after it
	// ts.Close waits for the held call's POST: release it first.
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	do := func(method, sid, body string) (*http.Response, string) {
		if sid == "" {
			return send(t, ts.URL, method, body, nil)
		}
		return send(t, ts.URL, method, body, map[string]string{"MCP-Session-Id": sid})
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	open := func() string {
		r, body := do("POST", "", initialize)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("initialize: %d %s", r.StatusCode, body)
		}
		return r.Header.Get("MCP-Session-Id")
	}
	a := open()
	touchA("opened")
	b := open()
	if r, _ := do("POST", "", initialize); r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("third session: %d, Retry-After %q; want 503", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if r, _ := do("DELETE", b, ""); r.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", r.StatusCode)
	}
	c := open()

	big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 4096) + `"}}}`
	touchA("a body over MaxBody")
	if r, _ := do("POST", a, big); r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over MaxBody: %d, want 413", r.StatusCode)
	}

	// c stays busy with a call held open until a has idled out. a's last
	// request comes after c's call started, so c's idle timer is due first
	// and finds c busy (register's check, http_session.go) before a's ends a.
	held := make(chan string, 1)
	go func() {
		_, body := do("POST", c, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hold","arguments":{}}}`)
		held <- body
	}()
	select {
	case <-holding:
	case body := <-held:
		t.Fatalf("c's call ended before it was held: %s", body)
	case <-time.After(10 * time.Second):
		t.Fatal("c's call did not reach the server in 10 s")
	}
	touchA("its last request")
	if r, body := do("POST", a, `{"jsonrpc":"2.0","id":4,"method":"ping"}`); r.StatusCode != http.StatusOK {
		t.Fatalf("a's last request: %d %s", r.StatusCode, body)
	}
	for why := ""; why != "idle"; {
		select {
		case r := <-ends:
			why = r["why"]
		case <-time.After(10*time.Second + idle):
			t.Fatalf("no session ended idle in %v (IdleTimeout %v)", 10*time.Second+idle, idle)
		}
	}
	if r, body := do("POST", c, `{"jsonrpc":"2.0","id":6,"method":"ping"}`); r.StatusCode != http.StatusOK {
		t.Fatalf("the busy session, past its IdleTimeout, once a session ended idle: %d %s", r.StatusCode, body)
	}
	if r, body := do("POST", a, `{"jsonrpc":"2.0","id":5,"method":"ping"}`); r.StatusCode != http.StatusNotFound {
		t.Fatalf("the idle session, once a session ended idle: %d %s, want 404", r.StatusCode, body)
	}
	releaseOnce()
	select {
	case body := <-held:
		if !strings.Contains(body, `"id":3,"result"`) {
			t.Fatalf("the busy session's call: %s", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("c's released call has no answer in 10 s")
	}
	if r, body := do("POST", c, `{"jsonrpc":"2.0","id":7,"method":"ping"}`); r.StatusCode != http.StatusOK {
		t.Fatalf("the busy session after its call: %d %s", r.StatusCode, body)
	}
	select {
	case r := <-ends:
		t.Fatalf("another session ended: %v", r)
	default:
	}
}

// send makes one request of a Streamable HTTP client to url and returns the
// response with its whole body.
func send(t *testing.T, url, method, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v // net/http sends req.Host, never Header["Host"]
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestLegacySSEClientThroughHTTPFront: a client of the 2024-11-05 HTTP+SSE
// transport (the go-sdk's SSEClientTransport) uses a remote MCP-Flow server
// through the HTTP front's backwards-compatible endpoint; its session ends
// with its stream.
func TestLegacySSEClientThroughHTTPFront(t *testing.T) {
	t.Parallel()
	ts := httpFront(t)
	c := mcp.NewClient(&mcp.Implementation{Name: "legacy-host", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.SSEClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]string{"text": "古い輸送"}})
	if err != nil || r.Content[0].(*mcp.TextContent).Text != "古い輸送" {
		t.Fatalf("echo: %v", err)
	}
	generateInline(t, ctx, cs, 1<<20)
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	// A POST for an unknown legacy session gets 404.
	if resp, _ := send(t, ts.URL+"?session=nope", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown legacy session: %d", resp.StatusCode)
	}
}

// generateInline has a go-sdk client call the generate tool for n bytes
// and checks that they arrive inline (an execution stream put back as a
// base64 blob), byte for byte.
func generateInline(t *testing.T, ctx context.Context, cs *mcp.ClientSession, n int) {
	t.Helper()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "generate", Arguments: map[string]any{"bytes": n}})
	if err != nil {
		t.Fatal(err)
	}
	blob := r.Content[0].(*mcp.EmbeddedResource).Resource.Blob
	sum := sha256.Sum256(blob)
	if len(blob) != n || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(int64(n)) {
		t.Fatalf("blob of %d bytes, want %d", len(blob), n)
	}
}
