package bridge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkClient2025 connects the go-sdk v1.8 client with opts, in
// 2025-11-25, through the front ("stdio": the CLI cli's bridge stdio;
// "http": an HTTP front) to srv; the session ends with the test.
func sdkClient2025(t *testing.T, cli, front string, srv *flow.Server, opts *mcp.ClientOptions) (context.Context, *mcp.ClientSession) {
	t.Helper()
	var tr mcp.Transport = &mcp.CommandTransport{Command: bridgeCmd(cli, srv)}
	if front == "http" {
		ts, _ := frontOn(t, srv, bridge.HTTPConfig{})
		tr = &mcp.StreamableClientTransport{Endpoint: ts.URL}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host-2025", Version: "1"}, opts).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("session speaks %q; want 2025-11-25", v)
	}
	return ctx, cs
}

// TestFrontsListChangedFrom2026Upstream: the go-sdk v1.8 client in 2025
// (initialize, its GET stream on the HTTP front, its host's stdout on the
// stdio front) hears tools/list_changed from a go-sdk v1.8 server that
// speaks 2026-07-28 only (stateless Streamable HTTP: no GET stream, changes
// only on subscriptions/listen), behind MCP-Flow: the bridge listens
// upstream on the 2025 session's behalf (spec §11.7, "The upstreams").
func TestFrontsListChangedFrom2026Upstream(t *testing.T) {
	t.Parallel()
	cli := buildCLI(t)
	for _, front := range []string{"stdio", "http"} {
		t.Run(front, func(t *testing.T) {
			t.Parallel()
			sdk := sdkfixture.NewServer()
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdk }, &mcp.StreamableHTTPOptions{Stateless: true}))
			t.Cleanup(hs.Close)
			cfg := flow.ServerConfig{Logger: flowtest.Quiet}
			bridge.NewHTTPUpstream(bridge.HTTPUpstreamConfig{Endpoint: hs.URL, Logger: flowtest.Quiet, Protocol: bridge.UpstreamModern}).Configure(&cfg)
			srv := flowtest.Serve(t, cfg)
			changed := make(chan struct{}, 1)
			sdkClient2025(t, cli, front, srv, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case changed <- struct{}{}:
					default:
					}
				}})
			// Neither the bridge's subscription upstream nor the client's GET
			// stream says when it is open: a tool is added every 200 ms
			// until a change comes (within 300 ms here).
			if _, added, ok := sdkfixture.AddToolsUntil(sdk, 200*time.Millisecond, 20*time.Second, changed); !ok { // 20 s: a hang guard
				t.Fatalf("no tools/list_changed after %d tools added in 20 s", added)
			}
		})
	}
}
