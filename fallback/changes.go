package fallback

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	sdkrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// ErrNotHTTP is Changes' error on a client that took MCP-Flow: its
// session's Hooks hear the changes.
var ErrNotHTTP = errors.New("fallback: Changes is for a Streamable HTTP client; an MCP-Flow session's Hooks.Notification hears its changes")

// Changes gives on each change notification the server sends: the list
// changes (notifications/tools/list_changed, prompts/…, resources/…) and,
// for each of uris, notifications/resources/updated with its uri (spec
// §11.7); until ctx ends (its cause returned) or the server ends it. It
// speaks MCP version: protocol.MCP20251125 (or "") or
// protocol.MCP20260728, on a connection of its own with the same endpoint
// and HTTP client (its token and certificate pin), closed on return.
//
// In 2025-11-25 the changes come on the standalone GET stream, which the
// go-sdk opens only for a session of its own client (from a hook a raw
// connection never gets, see httpSession): Changes opens that session and
// subscribes to uris with resources/subscribe. A server that goes away
// ends it once the go-sdk has given up reconnecting the GET stream (five
// attempts, about 20 s: measured with mcp-flow-server SIGKILLed, 22 s to
// exit 3).
//
// In 2026-07-28 it holds one subscriptions/listen request for every list
// change and uris open (httpSession.listen): on gets the stream's
// notifications/subscriptions/acknowledged first, then the changes, as
// flow.Session.Listen gives them over MCP-Flow. It returns nil when the
// server answers the request (it ended the subscription); a server that
// goes away ends it at once (20 ms after a SIGKILL here).
func (c *Client) Changes(ctx context.Context, version string, uris []string, on func(*jsonrpc.Request)) error {
	switch version {
	case "":
		version = protocol.MCP20251125
	case protocol.MCP20251125, protocol.MCP20260728:
	default:
		return fmt.Errorf("fallback: Changes speaks %s or %s, not %q", protocol.MCP20251125, protocol.MCP20260728, version)
	}
	if c.h == nil {
		return ErrNotHTTP
	}
	if version == protocol.MCP20260728 {
		return c.h.listen(ctx, flow.Subscriptions{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourceSubscriptions: uris}, on)
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

// listenID is the id of listen's one request.
const listenID = 1

// listen holds one 2026-07-28 subscriptions/listen request for want open
// on a Streamable HTTP connection of its own (the go-sdk's raw connection:
// its POST, its event stream, the MCP-Protocol-Version header from the
// request's _meta; no initialize, no session id: spec §11.6) and gives on
// every notification of its stream, notifications/subscriptions/acknowledged
// first, as flow.Session.Listen does over MCP-Flow (spec §11.7). It returns
// nil when the server answers the request (it ended the subscription), the
// answer's error, context.Cause(ctx), or why the stream broke: a server
// that goes away ends it at once, since the go-sdk does not resume it
// (MaxRetries -1).
func (h *httpSession) listen(ctx context.Context, want flow.Subscriptions, on func(*jsonrpc.Request)) error {
	t := &mcp.StreamableClientTransport{Endpoint: h.url, HTTPClient: h.hc, DisableStandaloneSSE: true, MaxRetries: -1}
	conn, err := t.Connect(ctx)
	if err != nil {
		return fmt.Errorf("fallback: Streamable HTTP %s: %w", h.url, err)
	}
	defer conn.Close()
	params, err := marshalParams(map[string]any{"notifications": want}, []mcpjson.Edit{
		mcpjson.Add(protocol.MetaProtocolVersion, []byte(strconv.Quote(protocol.MCP20260728))),
		mcpjson.Add(protocol.MetaClientCapabilities, []byte("{}")),
	})
	if err != nil {
		return err
	}
	id, _ := sdkrpc.MakeID(float64(listenID))
	if err := conn.Write(ctx, &sdkrpc.Request{ID: id, Method: protocol.MethodListen, Params: params}); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("fallback: %s: %w", protocol.MethodListen, err)
	}
	for {
		m, err := conn.Read(ctx)
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case err != nil:
			return fmt.Errorf("fallback: the %s stream ended: %w", protocol.MethodListen, errors.Join(err, ErrClosed))
		}
		switch m := m.(type) {
		case *sdkrpc.Request:
			if !m.IsCall() {
				on(&jsonrpc.Request{Method: m.Method, Params: m.Params})
			}
		case *sdkrpc.Response:
			if v, _ := m.ID.Raw().(int64); v != listenID {
				continue
			}
			if m.Error != nil {
				return fmt.Errorf("fallback: %s: %w", protocol.MethodListen, m.Error)
			}
			return nil
		}
	}
}
