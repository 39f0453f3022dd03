package bridge_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// paramToolServer is an MCP-Flow server whose tools/list has two pages:
// "plain" (no annotation), then "deploy", whose region and count arguments
// carry x-mcp-header Region and Count, or, once zone is set, whose region
// carries Zone. It counts the tools/list and tools/call requests it gets.
type paramToolServer struct {
	mu           sync.Mutex
	lists, calls int
	zone         bool
	endless      bool // every tools/list page names a next one
	srv          *flow.Server
	sessions     chan *flow.Session
}

func newParamToolServer(t *testing.T) *paramToolServer {
	p := &paramToolServer{sessions: make(chan *flow.Session, 8)}
	mux := flow.Mux{
		"tools/list": flow.HandlerFunc(func(_ context.Context, req *flow.Request) (any, error) {
			var in struct{ Cursor string }
			_ = json.Unmarshal(req.Params, &in)
			p.mu.Lock()
			defer p.mu.Unlock()
			p.lists++
			if in.Cursor == "" || p.endless {
				return json.RawMessage(`{"tools":[{"name":"plain","inputSchema":{"type":"object"}}],"nextCursor":"page2"}`), nil
			}
			region := `{"type":"string","x-mcp-header":"Region"}`
			if p.zone {
				region = `{"type":"string","x-mcp-header":"Zone"}`
			}
			return json.RawMessage(`{"tools":[{"name":"deploy","inputSchema":{"type":"object","properties":{"region":` + region +
				`,"count":{"type":"integer","x-mcp-header":"Count"},"query":{"type":"string"}}}}]}`), nil
		}),
		"tools/call": flow.HandlerFunc(func(context.Context, *flow.Request) (any, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.calls++
			return map[string]any{"content": []any{map[string]any{"type": "text", "text": "deployed"}}}, nil
		}),
	}
	p.srv = flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet, Handler: mux, Capabilities: []byte(`{"tools":{}}`),
		OnSession: func(s *flow.Session) { p.sessions <- s }})
	return p
}

func (p *paramToolServer) counts() (lists, calls int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lists, p.calls
}

// TestHTTPFrontStatelessParamHeaders: a 2026-07-28 client's tools/call
// through the HTTP front has its Mcp-Param-* headers held to its
// arguments for the tool's x-mcp-header annotations (spec §11.6;
// transports 2026-07-28, "Server Behavior for Custom Headers", "Server
// Validation"): a missing, differing, undecodable or unexpected header gets
// 400 and -32020 with the request's id and never reaches the server; the
// agreeing forms (Base64 sentinel, 42.0 for 42, no header for null or
// absent) are served. The front learns the tools by itself (both pages of
// tools/list) on the first call of a tool it does not know, and again from
// each tools/list answer a client gets through it.
func TestHTTPFrontStatelessParamHeaders(t *testing.T) {
	t.Parallel()
	p := newParamToolServer(t)
	url := statelessFront(t, p.srv, p.sessions)
	call := func(id int, args string, extra map[string]string) (*http.Response, string) {
		h := modern("tools/call", "deploy")
		for k, v := range extra {
			h[k] = v
		}
		return send(t, url, "POST", modernBody(id, "tools/call", `{"name":"deploy","arguments":`+args+`}`), h)
	}
	r, body := call(1, `{"region":"us-west1","count":42,"query":"q"}`, map[string]string{"Mcp-Param-Region": "us-west1", "Mcp-Param-Count": "42"})
	if lists, calls := p.counts(); r.StatusCode != http.StatusOK || !strings.Contains(body, "deployed") || lists != 2 || calls != 1 {
		t.Fatalf("first call with its headers: %d %s; the server saw %d tools/list (want both pages) and %d tools/call", r.StatusCode, body, lists, calls)
	}
	for _, c := range []struct {
		name, args string
		hdr        map[string]string
		want       string
	}{
		{"Region missing", `{"region":"us-west1"}`, nil, "the Mcp-Param-Region header is missing"},
		{"Region differs", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "eu-west1"}, `Mcp-Param-Region header value "eu-west1" does not match body value "us-west1"`},
		{"Region Base64 differs", `{"region":"Zürich"}`, map[string]string{"Mcp-Param-Region": "=?base64?WnVyaWNo?="}, `Mcp-Param-Region header value "Zurich"`},
		{"Region Base64 broken", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "=?base64?!!?="}, "malformed"},
		{"Count differs", `{"count":42}`, map[string]string{"Mcp-Param-Count": "43"}, `Mcp-Param-Count header value "43" does not match body value 42`},
		{"Count for a null", `{"count":null}`, map[string]string{"Mcp-Param-Count": "0"}, "absent or null"},
		{"Region for an absent argument", `{"query":"q"}`, map[string]string{"Mcp-Param-Region": "us-west1"}, "absent or null"},
	} {
		r, body := call(7, c.args, c.hdr)
		wantHeaderMismatch(t, c.name, r, body, "7", c.want)
	}
	for _, c := range []struct {
		name, args string
		hdr        map[string]string
	}{
		{"Base64 sentinel", `{"region":"Zürich"}`, map[string]string{"Mcp-Param-Region": "=?base64?WsO8cmljaA==?="}},
		{"42.0 for 42", `{"count":42}`, map[string]string{"Mcp-Param-Count": "42.0"}},
		{"null and absent", `{"region":null,"query":"q"}`, nil},
	} {
		if r, body := call(8, c.args, c.hdr); r.StatusCode != http.StatusOK || !strings.Contains(body, "deployed") {
			t.Errorf("%s: %d %s, want served", c.name, r.StatusCode, body)
		}
	}
	if lists, calls := p.counts(); lists != 2 || calls != 4 {
		t.Fatalf("the server saw %d tools/list and %d tools/call, want 2 and 4 (no refused call reached it)", lists, calls)
	}
	// The tool changes: the holder learns it from a client's own tools/list
	// (both pages pass through it).
	p.mu.Lock()
	p.zone = true
	p.mu.Unlock()
	for _, cursor := range []string{"", `,"cursor":"page2"`} {
		if r, body := send(t, url, "POST", modernBody(9, "tools/list", `{"x":0`+cursor+`}`), modern("tools/list", "")); r.StatusCode != http.StatusOK {
			t.Fatalf("tools/list: %d %s", r.StatusCode, body)
		}
	}
	if r, body := call(10, `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "us-west1"}); r.StatusCode != http.StatusBadRequest || !strings.Contains(body, "the Mcp-Param-Zone header is missing") {
		t.Errorf("after the tool changed, the old header only: %d %s; want 400 naming Mcp-Param-Zone", r.StatusCode, body)
	}
	if r, body := call(11, `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Zone": "us-west1"}); r.StatusCode != http.StatusOK {
		t.Errorf("after the tool changed, its new header: %d %s", r.StatusCode, body)
	}
	if lists, _ := p.counts(); lists != 4 {
		t.Errorf("the server saw %d tools/list, want 4 (the front's 2, the client's 2)", lists)
	}
}

// TestHTTPFrontStatelessParamHeadersPageLimit: a server whose tools/list
// never ends is asked for maxToolPages (16) pages and no more; its tools'
// headers then go unchecked, and the call is served.
func TestHTTPFrontStatelessParamHeadersPageLimit(t *testing.T) {
	t.Parallel()
	p := newParamToolServer(t)
	p.mu.Lock()
	p.endless = true
	p.mu.Unlock()
	url := statelessFront(t, p.srv, p.sessions)
	r, body := send(t, url, "POST", modernBody(1, "tools/call", `{"name":"deploy","arguments":{"region":"us-west1"}}`), modern("tools/call", "deploy"))
	if lists, calls := p.counts(); r.StatusCode != http.StatusOK || lists != 16 || calls != 1 {
		t.Fatalf("%d %s; the server saw %d tools/list (want 16) and %d tools/call", r.StatusCode, body, lists, calls)
	}
}

// TestHTTPFrontStatelessParamHeadersGoSDK: the go-sdk v1.8 client, which
// sends Mcp-Param-* headers for the tools it has listed, through the HTTP
// front: after listing (both pages, through the front, which then knows
// the tools without asking), its call with a non-ASCII string and an
// integer is served, so its encoding and the front's check agree.
func TestHTTPFrontStatelessParamHeadersGoSDK(t *testing.T) {
	t.Parallel()
	p := newParamToolServer(t)
	url := statelessFront(t, p.srv, p.sessions)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // hang guard; the test takes ~0.1 s
	defer cancel()
	cs := sdkSession(t, ctx, url, "", "")
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "deploy", Arguments: map[string]any{"region": "Zürich", "count": 42}})
	if err != nil || res.IsError {
		t.Fatalf("the go-sdk client's call of deploy: %v %+v", err, res)
	}
	if lists, calls := p.counts(); lists != 2 || calls != 1 || len(names) != 2 {
		t.Fatalf("tools %v; the server saw %d tools/list and %d tools/call, want the client's 2 and 1", names, lists, calls)
	}
}
