package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFrontsResourceSubscribe: the go-sdk v1.8 client in 2025-11-25,
// through each front, subscribes to mcp-flow-server's resource
// mcp-flow://toggled (resources/subscribe) and hears its
// notifications/resources/updated when toggle changes it (spec §11.7).
func TestFrontsResourceSubscribe(t *testing.T) {
	t.Parallel()
	cli := buildCLI(t)
	for _, front := range []string{"stdio", "http"} {
		t.Run(front, func(t *testing.T) {
			t.Parallel()
			srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet}) // the demo tools and their resource
			updated := make(chan string, 16)
			ctx, cs := sdkClient2025(t, cli, front, srv, &mcp.ClientOptions{
				ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
					select {
					case updated <- r.Params.URI:
					default:
					}
				}})
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: demotools.ToggledURI}); err != nil {
				t.Fatal(err)
			}
			// The HTTP front's client hears it on its GET stream, which it
			// opens on its own time: toggle runs every 200 ms until an
			// update comes (the first time, here).
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			guard := time.After(20 * time.Second) // a hang guard
			for i := 1; ; i++ {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "toggle", Arguments: map[string]any{}}); err != nil {
					t.Fatal(err)
				}
				select {
				case uri := <-updated:
					if uri != demotools.ToggledURI {
						t.Fatalf("resources/updated of %q, want %s", uri, demotools.ToggledURI)
					}
					return
				case <-tick.C:
				case <-guard:
					t.Fatalf("no resources/updated after %d toggles in 20 s", i)
				}
			}
		})
	}
}
