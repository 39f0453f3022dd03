//go:build linux

package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/mcp-flow/mcp-flow/bridge/internal/upstream"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUpstreamListen: a 2026-07-28 MCP-Flow client's subscriptions/listen
// through the bridge to the go-sdk v1.8 server over Streamable HTTP, in
// each of the upstream's eras (spec §11.7): a 2026-07-28 upstream gets it
// and its acknowledgement and tools/list_changed come back named by the
// client's id; for a 2025 upstream the bridge acknowledges it (what the
// upstream's initialize announced) and turns the upstream's unasked
// tools/list_changed into the subscription's. Both happen when a tool is
// added to the server.
func TestUpstreamListen(t *testing.T) {
	for _, era := range []string{upstream.UpstreamModern, upstream.UpstreamLegacy} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			sdk := sdkfixture.NewServer()
			// go-sdk serves 2026-07-28 on a stateless handler only (its
			// StreamableServerTransport.SupportsProtocolVersion); a 2025
			// session needs its GET stream, which only a stateful one has.
			opts := &mcp.StreamableHTTPOptions{Stateless: era == upstream.UpstreamModern}
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdk }, opts))
			t.Cleanup(hs.Close)
			scfg := flow.ServerConfig{Logger: flowtest.Quiet}
			upstream.NewHTTPUpstream(upstream.HTTPUpstreamConfig{Endpoint: hs.URL, Logger: flowtest.Quiet, Protocol: era}).Configure(&scfg)
			srv := flowtest.Serve(t, scfg)
			ctx, s := dialEra(t, srv, protocol.MCP20260728)
			events := make(chan *jsonrpc.Request, 8)
			lctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go s.Listen(lctx, flow.Subscriptions{ToolsListChanged: true}, func(n *jsonrpc.Request) { events <- n })
			// A hang guard: each event comes within 100 ms here.
			next := func(what string) *jsonrpc.Request {
				t.Helper()
				select {
				case n := <-events:
					return n
				case <-time.After(20 * time.Second):
					t.Fatalf("no %s", what)
					return nil
				}
			}
			ack := next("acknowledgement")
			var p struct{ Notifications flow.Subscriptions }
			if ack.Method != protocol.MethodSubscriptionsAcknowledged || json.Unmarshal(ack.Params, &p) != nil || !p.Notifications.ToolsListChanged {
				t.Fatalf("acknowledgement %s %s; want one granting toolsListChanged", ack.Method, ack.Params)
			}
			sub := string(mcpjson.MetaValue(ack.Params, protocol.MetaSubscriptionID))
			// A 2025 upstream sends its change on its GET stream, which
			// the bridge's go-sdk client opens after initialize, on its own
			// time: nothing outside says when. A change made before that
			// goes nowhere, so a tool is added every 200 ms until one
			// change comes (the first, here, unless the machine is loaded:
			// a run of two suites side by side missed it).
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			guard := time.After(20 * time.Second) // a hang guard
			var n *jsonrpc.Request
			for i := 0; n == nil; i++ {
				mcp.AddTool(sdk, &mcp.Tool{Name: fmt.Sprintf("added%d", i)}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{}, nil, nil
				})
				select {
				case n = <-events:
				case <-tick.C:
				case <-guard:
					t.Fatalf("no tools/list_changed after %d tools added in 20 s", i+1)
				}
			}
			if n.Method != protocol.MethodToolsListChanged || string(mcpjson.MetaValue(n.Params, protocol.MetaSubscriptionID)) != sub {
				t.Fatalf("change %s %s; want %s naming subscription %s", n.Method, n.Params, protocol.MethodToolsListChanged, sub)
			}
		})
	}
}
