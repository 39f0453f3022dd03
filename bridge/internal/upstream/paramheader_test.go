//go:build linux

package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
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
