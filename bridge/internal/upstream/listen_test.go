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

// sdkBehind serves the go-sdk server sdk over Streamable HTTP in era
// (upstream.UpstreamModern or UpstreamLegacy) and returns a flow server
// whose upstream it is. go-sdk serves 2026-07-28 on a stateless handler
// only (its StreamableServerTransport.SupportsProtocolVersion); a 2025
// session needs its GET stream, which only a stateful one has.
func sdkBehind(t *testing.T, sdk *mcp.Server, era string) *flow.Server {
	t.Helper()
	opts := &mcp.StreamableHTTPOptions{Stateless: era == upstream.UpstreamModern}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdk }, opts))
	t.Cleanup(hs.Close)
	scfg := flow.ServerConfig{Logger: flowtest.Quiet}
	upstream.NewHTTPUpstream(upstream.HTTPUpstreamConfig{Endpoint: hs.URL, Logger: flowtest.Quiet, Protocol: era}).Configure(&scfg)
	return flowtest.Serve(t, scfg)
}

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
			srv := sdkBehind(t, sdk, era)
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
	srv := sdkBehind(t, sdk, upstream.UpstreamModern)
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

// TestUpstreamResourceSubscribe2025: a 2025 MCP-Flow session's
// resources/subscribe through the bridge to the go-sdk v1.8 server over
// Streamable HTTP, in each of the upstream's eras (spec §11.7): a 2025
// upstream gets it as it is and sends its updates unasked; for a
// 2026-07-28 upstream, which has no resources/subscribe, the bridge opens
// its subscription upstream again naming the session's URIs. Either way
// the session gets notifications/resources/updated {uri} of the URIs it
// subscribed to, and none after resources/unsubscribe.
func TestUpstreamResourceSubscribe2025(t *testing.T) {
	for _, era := range []string{upstream.UpstreamModern, upstream.UpstreamLegacy} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			sdk := mcp.NewServer(&mcp.Implementation{Name: "resources", Version: "1"}, &mcp.ServerOptions{
				SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
				UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
			})
			for _, uri := range []string{"test://a", "test://b"} {
				sdk.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "x"}}}, nil
				})
			}
			srv := sdkBehind(t, sdk, era)
			events := make(chan string, 64)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			t.Cleanup(cancel)
			s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet,
				Hooks: flow.Hooks{Notification: func(_ *flow.Session, n *jsonrpc.Request) {
					var p struct{ URI string }
					if n.Method == protocol.MethodResourceUpdated && json.Unmarshal(n.Params, &p) == nil && mcpjson.MetaValue(n.Params, protocol.MetaSubscriptionID) == nil {
						events <- p.URI
					} else {
						events <- "unexpected " + n.Method + " " + string(n.Params)
					}
				}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			for _, uri := range []string{"test://a", "test://b"} {
				if _, err := s.Call(ctx, "resources/subscribe", map[string]string{"uri": uri}); err != nil {
					t.Fatalf("resources/subscribe %s: %v", uri, err)
				}
			}
			// A 2025 upstream sends its updates on the GET stream, which the
			// bridge's client opens after initialize on its own time: a is
			// updated every 200 ms until its update comes (the first, here).
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			guard := time.After(20 * time.Second) // a hang guard
			var got string
			for got == "" {
				_ = sdk.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://a"})
				select {
				case got = <-events:
				case <-tick.C:
				case <-guard:
					t.Fatal("no resources/updated of test://a in 20 s")
				}
			}
			if got != "test://a" {
				t.Fatalf("event %q, want test://a's update", got)
			}
			if _, err := s.Call(ctx, "resources/unsubscribe", map[string]string{"uri": "test://a"}); err != nil {
				t.Fatal(err)
			}
			for len(events) > 0 { // a's updates sent while the first was on its way
				if e := <-events; e != "test://a" {
					t.Fatalf("event %q before unsubscribing, want test://a's", e)
				}
			}
			_ = sdk.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://a"})
			_ = sdk.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://b"})
			select {
			case e := <-events:
				if e != "test://b" {
					t.Fatalf("after unsubscribing test://a the next event is %q, want test://b's update", e)
				}
			case <-time.After(20 * time.Second): // a hang guard
				t.Fatal("no resources/updated of test://b in 20 s")
			}
		})
	}
}

// TestUpstreamResourceSubscribeStdio: as TestUpstreamResourceSubscribe2025
// with the other upstream kind, the go-sdk fixture as a stdio process in
// each era: a 2025 session subscribed to sdk-fixture://touched hears its
// notifications/resources/updated when the tool touch updates it (spec
// §11.7). Over stdio the update comes before touch's answer.
func TestUpstreamResourceSubscribeStdio(t *testing.T) {
	t.Parallel()
	fixture := buildFixture(t)
	for _, era := range []string{upstream.UpstreamModern, upstream.UpstreamLegacy} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			scfg := flow.ServerConfig{Logger: flowtest.Quiet}
			upstream.NewStdioUpstream(upstream.StdioUpstreamConfig{Command: []string{fixture}, Protocol: era, Logger: flowtest.Quiet}).Configure(&scfg)
			srv := flowtest.Serve(t, scfg)
			events := make(chan *jsonrpc.Request, 8)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard: the test takes 50 ms here
			t.Cleanup(cancel)
			s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet,
				Hooks: flow.Hooks{Notification: func(_ *flow.Session, n *jsonrpc.Request) { events <- n }}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if _, err := s.Call(ctx, "resources/subscribe", map[string]string{"uri": sdkfixture.TouchedURI}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Call(ctx, "tools/call", map[string]any{"name": "touch", "arguments": map[string]any{}}); err != nil {
				t.Fatal(err)
			}
			select {
			case n := <-events:
				var p struct{ URI string }
				if n.Method != protocol.MethodResourceUpdated || json.Unmarshal(n.Params, &p) != nil || p.URI != sdkfixture.TouchedURI || mcpjson.MetaValue(n.Params, protocol.MetaSubscriptionID) != nil {
					t.Fatalf("notification %s %s; want %s of %s", n.Method, n.Params, protocol.MethodResourceUpdated, sdkfixture.TouchedURI)
				}
			case <-ctx.Done():
				t.Fatal("no resources/updated")
			}
		})
	}
}

// TestUpstreamResubscribeKeepsUpdates: a 2025 session subscribes to the
// fixture's resource and then, again and again, to another URI, so that
// the bridge replaces the subscriptions/listen it holds upstream each time
// (spec §11.7). The go-sdk v1.8 server keeps a session's subscriptions per
// session, and a listen's end unsubscribes its URIs: had the new listen
// been opened before the old one's end was done upstream, that end would
// undo what the new one asked for, and the touch after the answer would
// reach no one. Every touch after a resubscribe is heard.
func TestUpstreamResubscribeKeepsUpdates(t *testing.T) {
	t.Parallel()
	fixture := buildFixture(t)
	scfg := flow.ServerConfig{Logger: flowtest.Quiet}
	upstream.NewStdioUpstream(upstream.StdioUpstreamConfig{Command: []string{fixture}, Protocol: upstream.UpstreamModern, Logger: flowtest.Quiet}).Configure(&scfg)
	srv := flowtest.Serve(t, scfg)
	events := make(chan *jsonrpc.Request, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard: the test takes about 200 ms here
	t.Cleanup(cancel)
	s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet,
		Hooks: flow.Hooks{Notification: func(_ *flow.Session, n *jsonrpc.Request) {
			if n.Method == protocol.MethodResourceUpdated {
				events <- n
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Call(ctx, "resources/subscribe", map[string]string{"uri": sdkfixture.TouchedURI}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := s.Call(ctx, "resources/subscribe", map[string]string{"uri": fmt.Sprintf("sdk-fixture://other/%d", i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Call(ctx, "tools/call", map[string]any{"name": "touch", "arguments": map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		// The update goes out before touch's answer, on the same pipe, and
		// its notification before the answer on the control stream: when
		// the call has returned, an update heard has been delivered.
		select {
		case <-events:
		default:
			t.Fatalf("resubscribe %d: the touch after it was not heard (the old listen's end unsubscribed %s)", i, sdkfixture.TouchedURI)
		}
	}
}
