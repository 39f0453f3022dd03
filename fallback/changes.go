package fallback

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-flow/mcp-flow/protocol"
)

// ErrNotHTTP is Changes' error on a client that took MCP-Flow: its
// session's Hooks hear the changes.
var ErrNotHTTP = errors.New("fallback: Changes is for a Streamable HTTP client; an MCP-Flow session's Hooks.Notification hears its changes")

// Changes gives on the method of each list change the server sends
// (notifications/tools/list_changed, prompts/…, resources/…; spec §11.7)
// until ctx ends (its cause returned) or the server ends the session. A
// 2025-11-25 server sends them on the standalone GET stream, which the
// go-sdk opens only for a session of its own client (from a hook a raw
// connection never gets, see httpSession): so Changes opens a second
// session, the go-sdk's client on the same endpoint and HTTP client (its
// token and certificate pin), and closes it on return.
func (c *Client) Changes(ctx context.Context, on func(method string)) error {
	if c.h == nil {
		return ErrNotHTTP
	}
	h := c.h
	cl := mcp.NewClient(&mcp.Implementation{Name: "mcp-flow", Version: protocol.Version}, &mcp.ClientOptions{
		Logger:                     h.log,
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { on(protocol.MethodToolsListChanged) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { on(protocol.MethodPromptsListChanged) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { on(protocol.MethodResourcesListChanged) },
	})
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.url, HTTPClient: h.hc},
		&mcp.ClientSessionOptions{ProtocolVersion: protocol.MCP20251125})
	if err != nil {
		return fmt.Errorf("fallback: Streamable HTTP session for changes: %w", err)
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
