//go:build linux

package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-flow/mcp-flow/bridge/internal/upstream"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPUpstreamParamHeaders: toward a 2026-07-28 HTTP upstream (the
// go-sdk v1.8 server, which holds Mcp-Param-* headers to the body and
// refuses a missing one with 400 and -32020), a tools/call carries the
// Mcp-Param-* headers of its tool's x-mcp-header arguments once the
// upstream's tools/list answer has named them (spec §10, "Eras";
// transports 2026-07-28, "Custom Headers from Tool Parameters"): a string
// that is not plain ASCII in the Base64 sentinel form, an integer in
// decimal, a null or absent argument with no header. Before any tools/list
// the bridge knows no schema, sends none, and the upstream's -32020 comes
// back to the client.
func TestHTTPUpstreamParamHeaders(t *testing.T) {
	t.Parallel()
	sdk := mcp.NewServer(&mcp.Implementation{Name: "params", Version: "1"}, nil)
	sdk.AddTool(&mcp.Tool{Name: "deploy", InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"region": map[string]any{"type": "string", "x-mcp-header": "Region"},
			"count":  map[string]any{"type": "integer", "x-mcp-header": "Count"},
			"query":  map[string]any{"type": "string"},
		},
	}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdk }, &mcp.StreamableHTTPOptions{Stateless: true})
	var mu sync.Mutex
	var calls []http.Header // the Mcp-Param-* headers of each tools/call POST
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			ph := http.Header{}
			for k, v := range r.Header {
				if strings.HasPrefix(k, "Mcp-Param-") {
					ph[k] = v
				}
			}
			mu.Lock()
			calls = append(calls, ph)
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	scfg := flow.ServerConfig{Logger: flowtest.Quiet}
	upstream.NewHTTPUpstream(upstream.HTTPUpstreamConfig{Endpoint: hs.URL, Logger: flowtest.Quiet, Protocol: protocol.MCP20260728}).Configure(&scfg)
	srv := flowtest.Serve(t, scfg)
	ctx, s := dialEra(t, srv, protocol.MCP20260728)
	call := func(args map[string]any) error {
		_, err := s.Call(ctx, "tools/call", map[string]any{"name": "deploy", "arguments": args})
		return err
	}
	var je *jsonrpc.Error
	if err := call(map[string]any{"region": "us-west1"}); !errors.As(err, &je) || je.Code != protocol.CodeHeaderMismatch {
		t.Fatalf("tools/call before any tools/list: %v, want the upstream's -32020 (no schema known yet)", err)
	}
	if _, err := s.Call(ctx, "tools/list", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args map[string]any
		want http.Header
	}{
		{map[string]any{"region": "us-west1", "count": 42, "query": "x"}, http.Header{"Mcp-Param-Region": {"us-west1"}, "Mcp-Param-Count": {"42"}}},
		{map[string]any{"region": "Zürich", "count": -7}, http.Header{"Mcp-Param-Region": {"=?base64?WsO8cmljaA==?="}, "Mcp-Param-Count": {"-7"}}},
		{map[string]any{"region": "=?base64?literal?=", "count": nil}, http.Header{"Mcp-Param-Region": {"=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="}}},
		{map[string]any{"query": "no annotated argument"}, http.Header{}},
	}
	for _, c := range cases {
		if err := call(c.args); err != nil {
			t.Fatalf("tools/call %v: %v", c.args, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 1+len(cases) || len(calls[0]) != 0 {
		t.Fatalf("the upstream saw %d tools/call POSTs (%v), want %d, the first without Mcp-Param-*", len(calls), calls, 1+len(cases))
	}
	for i, c := range cases {
		got, _ := json.Marshal(calls[1+i])
		want, _ := json.Marshal(c.want)
		if string(got) != string(want) {
			t.Errorf("tools/call %v: Mcp-Param-* %s, want %s", c.args, got, want)
		}
	}
}

// warnRecords collects the tool and reason of each record whose message
// starts with msg.
type warnRecords struct {
	msg string
	mu  sync.Mutex
	got []string
}

func (h *warnRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *warnRecords) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *warnRecords) WithGroup(string) slog.Handler            { return h }
func (h *warnRecords) Handle(_ context.Context, r slog.Record) error {
	if !strings.HasPrefix(r.Message, h.msg) || r.Level != slog.LevelWarn {
		return nil
	}
	var tool, reason string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "tool":
			tool = a.Value.String()
		case "reason":
			reason = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.got = append(h.got, tool+": "+reason)
	h.mu.Unlock()
	return nil
}

// TestHTTPUpstreamDropsInvalidTools: a 2026-07-28 HTTP upstream whose
// tools/list names a tool for each way an x-mcp-header annotation can be
// invalid (mcpjson/testdata/invalid_x_mcp_header.json), beside a valid
// one: the MCP-Flow client's tools/list has the valid tool only, as the
// transports ask a Streamable HTTP client ("Client Behavior"; spec §11.6),
// and the bridge warns once per dropped tool, naming it and the reason,
// however often the list is asked for. The go-sdk v1.8 server refuses to
// register such tools, so its tools/list answer is the test's own; the
// rest (server/discover) is the go-sdk server's.
func TestHTTPUpstreamDropsInvalidTools(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../../mcpjson/testdata/invalid_x_mcp_header.json")
	var bad map[string]json.RawMessage
	if err == nil {
		err = json.Unmarshal(b, &bad)
	}
	if err != nil {
		t.Fatal(err)
	}
	tools := []string{`{"name":"fine","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"R"}}}}`}
	for name, schema := range bad {
		tools = append(tools, `{"name":`+strconv.Quote(name)+`,"inputSchema":`+string(schema)+`}`)
	}
	list := `{"tools":[` + strings.Join(tools, ",") + `],"resultType":"complete","ttlMs":0,"cacheScope":"private"}`
	sdk := mcp.NewServer(&mcp.Implementation{Name: "invalid-tools", Version: "1"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdk }, &mcp.StreamableHTTPOptions{Stateless: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") != "tools/list" {
			h.ServeHTTP(w, r)
			return
		}
		var req struct{ ID json.RawMessage }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, list)
	}))
	t.Cleanup(hs.Close)
	warns := &warnRecords{msg: "upstream tool left out of tools/list"}
	scfg := flow.ServerConfig{Logger: flowtest.Quiet}
	upstream.NewHTTPUpstream(upstream.HTTPUpstreamConfig{Endpoint: hs.URL, Logger: slog.New(warns), Protocol: protocol.MCP20260728}).Configure(&scfg)
	srv := flowtest.Serve(t, scfg)
	ctx, s := dialEra(t, srv, protocol.MCP20260728)
	for range 2 {
		r, err := s.Call(ctx, "tools/list", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		var res struct{ Tools []struct{ Name string } }
		if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "fine" {
			t.Fatalf("tools/list: %s; want the tool fine only", r.Result)
		}
	}
	warns.mu.Lock()
	defer warns.mu.Unlock()
	if len(warns.got) != len(bad) {
		t.Fatalf("%d warnings, want one per invalid tool (%d): %q", len(warns.got), len(bad), warns.got)
	}
	for _, w := range warns.got {
		name, reason, _ := strings.Cut(w, ": ")
		if _, ok := bad[name]; !ok || !strings.Contains(reason, "x-mcp-header") {
			t.Errorf("warning %q: not an invalid tool, or no reason", w)
		}
	}
}
