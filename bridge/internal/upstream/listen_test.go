//go:build linux

package upstream_test

import (
	"context"
	"encoding/json"
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
			n, added, ok := sdkfixture.AddToolsUntil(sdk, 200*time.Millisecond, 20*time.Second, events) // 20 s: a hang guard
			if !ok {
				t.Fatalf("no tools/list_changed after %d tools added in 20 s", added)
			}
			if n.Method != protocol.MethodToolsListChanged || string(mcpjson.MetaValue(n.Params, protocol.MetaSubscriptionID)) != sub {
				t.Fatalf("change %s %s; want %s naming subscription %s", n.Method, n.Params, protocol.MethodToolsListChanged, sub)
			}
		})
	}
}

// TestUpstreamListenFor2025Client: a 2025 MCP-Flow session whose upstream
// speaks 2026-07-28 only (the go-sdk v1.8 server, stateless Streamable
// HTTP: no GET stream, no change unasked) hears the upstream's
// tools/list_changed the 2025 way, unasked and without a subscription's
// _meta: the bridge holds a subscriptions/listen upstream on its behalf
// (spec §11.7, "The upstreams").
func TestUpstreamListenFor2025Client(t *testing.T) {
	t.Parallel()
	sdk := sdkfixture.NewServer()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdk }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	scfg := flow.ServerConfig{Logger: flowtest.Quiet}
	upstream.NewHTTPUpstream(upstream.HTTPUpstreamConfig{Endpoint: hs.URL, Logger: flowtest.Quiet, Protocol: upstream.UpstreamModern}).Configure(&scfg)
	srv := flowtest.Serve(t, scfg)
	events := make(chan *jsonrpc.Request, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet,
		Hooks: flow.Hooks{Notification: func(_ *flow.Session, n *jsonrpc.Request) {
			select {
			case events <- n:
			default:
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if r := s.InitializeResult(); r == nil || r.ProtocolVersion == protocol.MCP20260728 {
		t.Fatalf("initialize result %+v; want a 2025 session", r)
	}
	// The bridge's subscription upstream opens after the client's
	// notifications/initialized, on its own time (nothing outside says
	// when): a tool is added every 200 ms until a change comes (the first
	// came within 20 ms here).
	n, added, ok := sdkfixture.AddToolsUntil(sdk, 200*time.Millisecond, 20*time.Second, events) // 20 s: a hang guard
	if !ok {
		t.Fatalf("no tools/list_changed after %d tools added in 20 s", added)
	}
	if n.Method != protocol.MethodToolsListChanged || mcpjson.MetaValue(n.Params, protocol.MetaSubscriptionID) != nil {
		t.Fatalf("notification %s %s; want %s without a subscription id", n.Method, n.Params, protocol.MethodToolsListChanged)
	}
}
