package fallback

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// ErrNotHTTP is Changes' error on a client that took MCP-Flow: its
// session's Hooks hear the changes.
var ErrNotHTTP = errors.New("fallback: Changes is for a Streamable HTTP client; an MCP-Flow session's Hooks.Notification hears its changes")

// Changes gives on each change notification the server sends: the list
// changes (notifications/tools/list_changed, prompts/…, resources/…) and,
// for each of uris it subscribes to (resources/subscribe, the 2025 way),
// notifications/resources/updated with its uri (spec §11.7); until ctx
// ends (its cause returned) or the server ends the session. A
// 2025-11-25 server sends them on the standalone GET stream, which the
// go-sdk opens only for a session of its own client (from a hook a raw
// connection never gets, see httpSession): so Changes opens a second
// session, the go-sdk's client on the same endpoint and HTTP client (its
// token and certificate pin), and closes it on return. A server that goes
// away ends it once the go-sdk has given up reconnecting the GET stream
// (five attempts, about 20 s: measured with mcp-flow-server SIGKILLed,
// 22 s to exit 3).
func (c *Client) Changes(ctx context.Context, uris []string, on func(*jsonrpc.Request)) error {
	if c.h == nil {
		return ErrNotHTTP
	}
	h := c.h
	notify := func(method string, params any) {
		if n, err := jsonrpc.NewRequest(jsonrpc.ID{}, method, params); err == nil {
			on(n)
		}
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "mcp-flow", Version: protocol.Version}, &mcp.ClientOptions{
		Logger:                   h.log,
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { notify(protocol.MethodToolsListChanged, nil) },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { notify(protocol.MethodPromptsListChanged, nil) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			notify(protocol.MethodResourcesListChanged, nil)
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			notify(protocol.MethodResourceUpdated, map[string]string{"uri": r.Params.URI})
		},
	})
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.url, HTTPClient: h.hc},
		&mcp.ClientSessionOptions{ProtocolVersion: protocol.MCP20251125})
	if err != nil {
		return fmt.Errorf("fallback: Streamable HTTP session for changes: %w", err)
	}
	for _, uri := range uris {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			_ = cs.Close()
			return fmt.Errorf("fallback: resources/subscribe %s: %w", uri, err)
		}
	}
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	select {
	case <-ctx.Done():
		_ = cs.Close()
		<-ended
		return context.Cause(ctx)
	case err := <-ended:
		return fmt.Errorf("fallback: the Streamable HTTP session for changes ended: %w", errors.Join(err, ErrClosed))
	}
}
