package main

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/mcp-flow/mcp-flow/fallback"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// eventPrinter writes each notification as one JSON line, whole lines only.
type eventPrinter struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *eventPrinter) print(n *jsonrpc.Request) {
	b := append(jsonrpc.AppendJSON(nil, n), '\n')
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.w.Write(b)
}

// withChanges returns hooks that also print the change notifications of
// a 2025 session.
func withChanges(h flow.Hooks, p *eventPrinter) flow.Hooks {
	next := h.Notification
	h.Notification = func(s *flow.Session, n *jsonrpc.Request) {
		if protocol.IsChange(n.Method) {
			p.print(n)
			return
		}
		if next != nil {
			next(s, n)
		}
	}
	return h
}

// listen is the listen command (spec §11.7): with -mcp-version 2026-07-28
// it opens a subscriptions/listen for the three list changes and uris'
// updates and prints each of its notifications, the acknowledgement
// first; on a 2025 session it subscribes to uris (resources/subscribe)
// and prints the change notifications that come unasked (over the
// Streamable HTTP fallback too: fallback.Client.Changes, which speaks
// 2025-11-25 only). It runs until Ctrl-C (exit 0) or the server ends it.
func listen(ctx context.Context, c *fallback.Client, o options, t *term, uris []string, p *eventPrinter) int {
	s := c.Session()
	interrupted := func() bool { return errors.Is(context.Cause(ctx), errInterrupted) }
	if s == nil {
		// The Streamable HTTP fallback: in 2025-11-25 the changes come
		// unasked on its GET stream, the uris' once subscribed; in
		// 2026-07-28 on subscriptions/listen requests held open
		// (fallback.Client.Changes).
		version := protocol.MCP20251125
		if o.mcpVersion == protocol.MCP20260728 {
			version = protocol.MCP20260728
		}
		err := c.Changes(ctx, version, uris, p.print)
		switch {
		case err == nil: // a 2026-07-28 listen the server answered
			t.say("mcp-flow: the server ended the subscription")
			return exitOK
		case interrupted():
			return exitOK
		}
		return failure(ctx, t, o, err, "listening")
	}
	if o.mcpVersion == protocol.MCP20260728 {
		want := flow.Subscriptions{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourceSubscriptions: uris}
		_, err := s.Listen(ctx, want, p.print)
		switch {
		case err == nil:
			t.say("mcp-flow: the server ended the subscription")
			return exitOK
		case interrupted():
			return exitOK
		}
		return failure(ctx, t, o, err, "listening")
	}
	for _, uri := range uris {
		// 2025: each URI's updates come unasked once subscribed (spec §11.7).
		if _, err := s.Call(ctx, "resources/subscribe", map[string]string{"uri": uri}); err != nil {
			return failure(ctx, t, o, err, "resources/subscribe "+uri)
		}
	}
	select {
	case <-ctx.Done():
		if interrupted() {
			return exitOK
		}
		return failure(ctx, t, o, context.Cause(ctx), "listening")
	case <-s.Done():
		return failure(ctx, t, o, s.Err(), "listening")
	}
}
