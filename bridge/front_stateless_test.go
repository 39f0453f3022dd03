// Over 400 lines: the 2026-07-28 cases of both fronts with the rig other
// test files share (statelessServer, statelessFront, modern, modernBody,
// sseData).

package bridge_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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

// mrtrResult is an InputRequiredResult (2026-07-28 schema, MRTR), as a
// tool answers before it has the client's input.
const mrtrResult = `{"resultType":"input_required","inputRequests":{"ask":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"s1"}`

// statelessServer is an MCP-Flow server with the test tools, "hold" (see
// holdTool), "chatter" (64 KiB progress messages every millisecond until
// cancelled, then a value on h.cancelled) and "meta" (answers with the
// _meta its request reached the server with); sessions receives each
// session the server opens.
func statelessServer(t *testing.T) (srv *flow.Server, h *holdTool, sessions chan *flow.Session) {
	t.Helper()
	mux, caps := flowtest.ToolsMux(t, demotools.Config{Root: t.TempDir()})
	h = &holdTool{holding: make(chan struct{}, 16), release: make(chan struct{}), cancelled: make(chan struct{}, 16)}
	tools := mux["tools/call"]
	mux["tools/call"] = flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		var p struct {
			Name string
			Meta json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(req.Params, &p)
		switch p.Name {
		case "mrtr": // a multi round-trip request's first answer
			return json.RawMessage(mrtrResult), nil
		case "chatter": // 64 KiB progress messages until cancelled
			msg := strings.Repeat("c", 64<<10)
			for i := 1; ; i++ {
				if err := req.Progress(float64(i), 0, msg); err != nil || ctx.Err() != nil {
					h.cancelled <- struct{}{}
					return nil, ctx.Err()
				}
				select {
				case <-ctx.Done():
					h.cancelled <- struct{}{}
					return nil, ctx.Err()
				case <-time.After(time.Millisecond):
				}
			}
		case "meta":
			return map[string]any{"content": []any{map[string]any{"type": "text", "text": string(p.Meta)}}}, nil
		case "hold":
			h.holding <- struct{}{}
			select {
			case <-h.release:
				return map[string]any{"content": []any{map[string]any{"type": "text", "text": "released"}}}, nil
			case <-ctx.Done():
				h.cancelled <- struct{}{}
				return nil, ctx.Err()
			}
		}
		return tools.HandleRequest(ctx, req)
	})
	sessions = make(chan *flow.Session, 64)
	srv = flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet, Handler: mux, Capabilities: caps,
		OnSession: func(s *flow.Session) { sessions <- s }})
	t.Cleanup(h.releaseAll)
	return srv, h, sessions
}

// statelessFront serves an HTTP front for srv; the test ends it with
// Shutdown and requires that every MCP-Flow session it opened has ended.
func statelessFront(t *testing.T, srv *flow.Server, sessions chan *flow.Session) string {
	t.Helper()
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(),
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: flowtest.Quiet}})
	ts := httptest.NewServer(front)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := front.Shutdown(ctx); err != nil {
			t.Errorf("front Shutdown: %v", err)
		}
		ts.Close()
		for {
			select {
			case s := <-sessions:
				select {
				case <-s.Done():
				case <-ctx.Done():
					t.Errorf("an MCP-Flow session of the front outlived its Shutdown (state %v)", s.State())
					return
				}
			default:
				return
			}
		}
	})
	return ts.URL
}

// modern is the header set of a 2026-07-28 request for method (and name,
// for Mcp-Name when not empty).
func modern(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// modernBody is a 2026-07-28 request: params with the _meta envelope.
func modernBody(id any, method, params string) string {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"x-test":{"a":1}}}`
	if params == "" {
		params = "{" + meta + "}"
	} else {
		params = strings.TrimSuffix(params, "}") + "," + meta + "}"
	}
	idj, _ := json.Marshal(id)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, idj, method, params)
}

// sseData returns the data of each SSE event in body.
func sseData(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && d != "" {
			out = append(out, d)
		}
	}
	return out
}

// TestHTTPFrontStateless: 2026-07-28 POSTs through the HTTP front, with no
// initialize and no MCP-Session-Id (spec §11.6): server/discover, a call
// answered as JSON with resultType, one with progress answered on its own
// SSE stream (progress first, with the client's token, then the result), a
// 1 MiB execution stream inlined, cache hints on tools/list, an
// input_required result passed byte for byte, the client's own _meta
// reaching the server, and the errors of the era (unsupported version
// -32022 with the supported list, unknown method 404, batch, GET and
// DELETE 405).
func TestHTTPFrontStateless(t *testing.T) {
	t.Parallel()
	srv, _, sessions := statelessServer(t)
	url := statelessFront(t, srv, sessions)

	r, body := send(t, url, "POST", modernBody(1, "server/discover", ""), modern("server/discover", ""))
	if r.StatusCode != http.StatusOK || r.Header.Get("MCP-Session-Id") != "" || !strings.Contains(body, `"supportedVersions":["2026-07-28"]`) {
		t.Fatalf("server/discover: %d, session id %q, %s", r.StatusCode, r.Header.Get("MCP-Session-Id"), body)
	}

	r, body = send(t, url, "POST", modernBody("e", "tools/call", `{"name":"echo","arguments":{"text":"héllo"}}`), modern("tools/call", "echo"))
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("MCP-Session-Id") != "" ||
		!strings.Contains(body, `"id":"e"`) || !strings.Contains(body, `"text":"héllo"`) || !strings.Contains(body, `"resultType":"complete"`) {
		t.Fatalf("echo: %d %q, %s", r.StatusCode, r.Header.Get("Content-Type"), body)
	}

	// A cacheable result gets the cautious cache hints the server did not
	// give (CacheableResult requires them), after its own members and the
	// resultType the MCP-Flow server added last.
	_, body = send(t, url, "POST", modernBody("l", "tools/list", ""), modern("tools/list", ""))
	if !strings.Contains(body, `}],"resultType":"complete","ttlMs":0,"cacheScope":"private"}}`) || !strings.Contains(body, `"name":"echo"`) {
		t.Fatalf("tools/list: %.300s … %s", body, body[max(0, len(body)-120):])
	}

	// A multi round-trip result passes as it is.
	_, body = send(t, url, "POST", modernBody("m", "tools/call", `{"name":"mrtr"}`), modern("tools/call", "mrtr"))
	if body != `{"jsonrpc":"2.0","id":"m","result":`+mrtrResult+`}` {
		t.Fatalf("input_required result: %s", body)
	}

	// The client's own _meta (its capabilities) reaches the server.
	_, body = send(t, url, "POST", modernBody(2, "tools/call", `{"name":"meta"}`), modern("tools/call", "meta"))
	if !strings.Contains(body, `x-test`) {
		t.Fatalf("the server did not get the client's clientCapabilities: %s", body)
	}

	params := `{"name":"slow","arguments":{"steps":3,"delayMs":5},"_meta":{"progressToken":"mine"}}`
	body = strings.Replace(modernBody(3, "tools/call", params), `"_meta":{"progressToken":"mine"},"_meta":{`, `"_meta":{"progressToken":"mine",`, 1)
	r, body = send(t, url, "POST", body, modern("tools/call", "slow"))
	if r.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("slow with progress: %q: %s", r.Header.Get("Content-Type"), body)
	}
	checkProgress(t, body, 3, 3, `"mine"`)

	_, body = send(t, url, "POST", modernBody(4, "tools/call", `{"name":"generate","arguments":{"bytes":1048576}}`), modern("tools/call", "generate"))
	var res struct {
		Result struct {
			Content []struct {
				Type     string
				Resource struct{ Blob []byte }
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil || len(res.Result.Content) == 0 || res.Result.Content[0].Type != "resource" {
		t.Fatalf("generate: %v: %.300s", err, body)
	}
	blob := res.Result.Content[0].Resource.Blob
	if sum := sha256.Sum256(blob); len(blob) != 1<<20 || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(1<<20) {
		t.Fatalf("generate 1 MiB: a blob of %d bytes inlined, want %d (the stream's bytes)", len(blob), 1<<20)
	}

	r, body = send(t, url, "POST", modernBody(5, "tools/list", ""), map[string]string{"MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"})
	var e struct {
		Error struct {
			Code int
			Data struct {
				Supported []string
				Requested string
			}
		}
	}
	_ = json.Unmarshal([]byte(body), &e)
	if r.StatusCode != http.StatusBadRequest || e.Error.Code != -32022 || e.Error.Data.Requested != "2099-01-01" ||
		strings.Join(e.Error.Data.Supported, ",") != "2026-07-28,2025-11-25,2025-06-18,2025-03-26" {
		t.Fatalf("unsupported version: %d %s", r.StatusCode, body)
	}
	// The same in _meta (the header agrees, so this is the body's version).
	unsupported := strings.ReplaceAll(modernBody(6, "tools/list", ""), "2026-07-28", "2027-01-01")
	r, body = send(t, url, "POST", unsupported, map[string]string{"MCP-Protocol-Version": "2027-01-01", "Mcp-Method": "tools/list"})
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"code":-32022`) {
		t.Fatalf("unsupported version: %d %s", r.StatusCode, body)
	}

	r, body = send(t, url, "POST", modernBody(7, "no/such", ""), modern("no/such", ""))
	if r.StatusCode != http.StatusNotFound || !strings.Contains(body, `"code":-32601`) || !strings.Contains(body, `"id":7`) {
		t.Fatalf("unknown method: %d %s", r.StatusCode, body)
	}
	r, body = send(t, url, "POST", "["+modernBody(8, "tools/list", "")+"]", modern("tools/list", ""))
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"code":-32600`) {
		t.Fatalf("batch: %d %s", r.StatusCode, body)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r, body := send(t, url, m, "", map[string]string{"MCP-Protocol-Version": "2026-07-28"}); r.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s with 2026-07-28: %d %s", m, r.StatusCode, body)
		}
	}
	r, _ = send(t, url, "POST", `{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}`, modern("notifications/whatever", ""))
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("notification: %d", r.StatusCode)
	}
}

// checkProgress requires body, the SSE stream of a slow call of steps
// steps with request id id, to hold progress updates with the client's
// token tok and the call's total only, increasing up to steps (an update
// not yet written when a newer one came may have been replaced by it, never
// the last), then the result.
func checkProgress(t *testing.T, body string, id, steps int, tok string) {
	t.Helper()
	msgs := sseData(body)
	if len(msgs) < 2 {
		t.Fatalf("slow: %d events: %s", len(msgs), body)
	}
	last := 0.0
	for _, m := range msgs[:len(msgs)-1] {
		var n struct {
			Method string
			Params struct {
				ProgressToken   json.RawMessage
				Progress, Total float64
			}
		}
		if err := json.Unmarshal([]byte(m), &n); err != nil || n.Method != "notifications/progress" || string(n.Params.ProgressToken) != tok ||
			n.Params.Total != float64(steps) || n.Params.Progress <= last {
			t.Fatalf("not the next progress update of this call (token %s, total %d, after %v): %s", tok, steps, last, m)
		}
		last = n.Params.Progress
	}
	if last != float64(steps) {
		t.Fatalf("the last progress update is %v, want %d: %s", last, steps, body)
	}
	if end := msgs[len(msgs)-1]; !strings.Contains(end, fmt.Sprintf(`"id":%d,"result"`, id)) {
		t.Fatalf("the last event is not the result: %s", end)
	}
}

// wantHeaderMismatch requires that a 2026-07-28 POST got 400 with
// HeaderMismatchError (-32020), the request's id and a message saying want.
func wantHeaderMismatch(t *testing.T, name string, r *http.Response, body, id, want string) {
	t.Helper()
	var e struct {
		ID    json.RawMessage
		Error struct {
			Code    int
			Message string
		}
	}
	_ = json.Unmarshal([]byte(body), &e)
	if r.StatusCode != http.StatusBadRequest || e.Error.Code != -32020 || string(e.ID) != id || !strings.Contains(e.Error.Message, want) {
		t.Errorf("%s: %d %s; want 400, -32020 with id %s saying %q", name, r.StatusCode, body, id, want)
	}
}

// TestHTTPFrontStatelessHeaderMismatch: routing headers that are missing
// or disagree with the body get 400 and HeaderMismatch (-32020) with the
// request's id (2026-07-28 transports, Server Validation); a Base64
// sentinel Mcp-Name that decodes to the body's name is accepted.
func TestHTTPFrontStatelessHeaderMismatch(t *testing.T) {
	t.Parallel()
	srv, _, sessions := statelessServer(t)
	url := statelessFront(t, srv, sessions)
	echo := modernBody(9, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
	for _, c := range []struct {
		name string
		body string
		hdr  map[string]string
		want string
	}{
		{"Mcp-Method missing", echo, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Name": "echo"}, "Mcp-Method header is missing"},
		{"Mcp-Method differs", echo, modern("tools/list", "echo"), `Mcp-Method header value "tools/list"`},
		{"Mcp-Name missing", echo, modern("tools/call", ""), "Mcp-Name header is missing"},
		{"Mcp-Name differs", echo, modern("tools/call", "slow"), `Mcp-Name header value "slow" does not match body value "echo"`},
		{"Mcp-Name Base64 differs", echo, modern("tools/call", "=?base64?c2xvdw==?="), `Mcp-Name header value "slow"`},
		{"version differs from _meta", strings.Replace(echo, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/protocolVersion":"2025-11-25"`, 1),
			modern("tools/call", "echo"), `MCP-Protocol-Version header value "2026-07-28" does not match body value "2025-11-25"`},
		{"no version header", echo, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "echo"}, "MCP-Protocol-Version header is missing"},
	} {
		r, body := send(t, url, "POST", c.body, c.hdr)
		wantHeaderMismatch(t, c.name, r, body, "9", c.want)
	}
	r, body := send(t, url, "POST", echo, modern("tools/call", "=?base64?ZWNobw==?="))
	if r.StatusCode != http.StatusOK || !strings.Contains(body, `"text":"x"`) {
		t.Fatalf("Base64 Mcp-Name of echo: %d %s", r.StatusCode, body)
	}
}

// TestHTTPFrontStatelessCancelByClosing: a 2026-07-28 client that closes
// its POST's stream cancels the request: the server's handler sees the
// cancellation ($/cancel), and the next request goes on the same front.
func TestHTTPFrontStatelessCancelByClosing(t *testing.T) {
	t.Parallel()
	srv, hold, sessions := statelessServer(t)
	url := statelessFront(t, srv, sessions)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(modernBody(1, "tools/call", `{"name":"hold"}`)))
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modern("tools/call", "hold") {
		req.Header.Set(k, v)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-hold.holding:
	case <-time.After(20 * time.Second):
		t.Fatal("the held call did not reach the server")
	}
	cancel() // closes the POST's connection
	select {
	case <-hold.cancelled:
	case <-time.After(20 * time.Second):
		t.Fatal("closing the POST did not cancel the call at the server")
	}
	if err := <-done; err == nil {
		t.Fatal("the cancelled POST got an answer")
	}
	if r, body := send(t, url, "POST", modernBody(2, "tools/call", `{"name":"echo","arguments":{"text":"after"}}`), modern("tools/call", "echo")); !strings.Contains(body, "after") {
		t.Fatalf("a call after the cancel: %d %s", r.StatusCode, body)
	}
}

// TestHTTPFrontBothEras: on one URL, a 2025-11-25 client (the go-sdk's
// Streamable HTTP client: initialize, session id, its progress) and
// 2026-07-28 clients at once; two of them use the same progress token
// concurrently, and each gets exactly its own updates.
func TestHTTPFrontBothEras(t *testing.T) {
	t.Parallel()
	srv, _, sessions := statelessServer(t)
	url := statelessFront(t, srv, sessions)
	progress := newProgressCount(3)
	c := mcp.NewClient(&mcp.Implementation{Name: "old", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.add() },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if cs.InitializeResult().ProtocolVersion != "2025-11-25" {
		t.Fatalf("2025 client negotiated %s", cs.InitializeResult().ProtocolVersion)
	}
	var wg sync.WaitGroup
	bodies := make([]string, 2)
	for i := range bodies {
		wg.Go(func() {
			params := fmt.Sprintf(`{"name":"slow","arguments":{"steps":%d,"delayMs":5},"_meta":{"progressToken":"same"}}`, 4+i)
			b := strings.Replace(modernBody(i, "tools/call", params), `"_meta":{"progressToken":"same"},"_meta":{`, `"_meta":{"progressToken":"same",`, 1)
			r, body := send(t, url, "POST", b, modern("tools/call", "slow"))
			if r.Header.Get("MCP-Session-Id") != "" {
				t.Errorf("a 2026-07-28 answer carries MCP-Session-Id %q", r.Header.Get("MCP-Session-Id"))
			}
			bodies[i] = body
		})
	}
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]int{"steps": 3, "delayMs": 5}}
	params.SetProgressToken("same")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	progress.wait(t, "the 2025 client's progress")
	wg.Wait()
	for i, body := range bodies {
		checkProgress(t, body, i, 4+i, `"same"`)
	}
	if tools, err := cs.ListTools(ctx, nil); err != nil || len(tools.Tools) < 5 {
		t.Fatalf("2025 tools/list after the 2026 calls: %v", err)
	}
}

// TestStdioFrontStateless: a host that speaks 2026-07-28 over the stdio
// front (spec §11.6): server/discover first, a call with resultType,
// progress with the host's token before its result, an unsupported version
// (-32022), and notifications/cancelled reaching the server as a
// cancellation; EOF ends the bridge with exit 0.
func TestStdioFrontStateless(t *testing.T) {
	t.Parallel()
	cli := buildCLI(t)
	srv, hold, _ := statelessServer(t)
	h := startNDJSONHost(t, cli, srv)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`)
	if r := h.read(); !strings.Contains(r, `"supportedVersions":["2026-07-28"]`) {
		t.Fatalf("server/discover: %s", r)
	}
	h.send(modernBody(2, "tools/call", `{"name":"meta"}`))
	if r := h.read(); !strings.Contains(r, `"id":2`) || !strings.Contains(r, "x-test") || !strings.Contains(r, `"resultType":"complete"`) {
		t.Fatalf("meta: %s", r)
	}
	params := `{"name":"slow","arguments":{"steps":3,"delayMs":5},"_meta":{"progressToken":7}}`
	h.send(strings.Replace(modernBody(3, "tools/call", params), `"_meta":{"progressToken":7},"_meta":{`, `"_meta":{"progressToken":7,`, 1))
	for i := 1; i <= 3; i++ {
		if r := h.read(); !strings.Contains(r, `"progressToken":7`) || !strings.Contains(r, fmt.Sprintf(`"progress":%d`, i)) {
			t.Fatalf("progress %d: %s", i, r)
		}
	}
	if r := h.read(); !strings.Contains(r, `"id":3`) || !strings.Contains(r, `"result"`) {
		t.Fatalf("slow: %s", r)
	}
	h.send(strings.ReplaceAll(modernBody(5, "tools/list", ""), "2026-07-28", "2099-01-01"))
	if r := h.read(); !strings.Contains(r, `"id":5`) || !strings.Contains(r, `"code":-32022`) || !strings.Contains(r, `"supported":["2026-07-28"`) {
		t.Fatalf("unsupported version: %s", r)
	}
	h.send(modernBody(6, "tools/call", `{"name":"hold"}`))
	select {
	case <-hold.holding:
	case <-time.After(20 * time.Second):
		t.Fatal("the held call did not reach the server")
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	select {
	case <-hold.cancelled:
	case <-time.After(20 * time.Second):
		t.Fatal("notifications/cancelled did not cancel the call at the server")
	}
	h.send(modernBody(7, "tools/call", `{"name":"echo","arguments":{"text":"after"}}`))
	if r := h.read(); !strings.Contains(r, `"id":7`) || !strings.Contains(r, "after") {
		t.Fatalf("after the cancel (no answer to id 6 expected): %s", r)
	}
	h.exit()
}

// TestHTTPFrontStatelessIdle: the MCP-Flow session the 2026-07-28 clients
// share ends once it has been idle for IdleTimeout (with what it offloaded),
// and the next 2026-07-28 request opens a new one.
func TestHTTPFrontStatelessIdle(t *testing.T) {
	t.Parallel()
	srv, _, sessions := statelessServer(t)
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	front := bridge.NewHTTPFront(bridge.HTTPConfig{IdleTimeout: 200 * time.Millisecond, Stdio: bridge.StdioConfig{URL: srv.URL(),
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: flowtest.Quiet}})
	ts := httptest.NewServer(front)
	defer ts.Close()
	defer front.Close()
	for round := range 2 {
		if _, body := send(t, ts.URL, "POST", modernBody(round, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`), modern("tools/call", "echo")); !strings.Contains(body, `"text":"hi"`) {
			t.Fatalf("round %d: %s", round, body)
		}
		var s *flow.Session
		select {
		case s = <-sessions:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: no MCP-Flow session opened", round)
		}
		select {
		case <-s.Done():
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: the shared session did not end after IdleTimeout", round)
		}
	}
}
