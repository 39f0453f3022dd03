package upstream

import (
	"encoding/json"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// A 2025 session of a 2026-07-28 upstream (spec §11.7, "The upstreams"):
// such an upstream sends no change unasked (no GET stream), so the bridge
// opens a subscriptions/listen upstream in the session's name and turns its
// events into the 2025 notifications the session expects.

// legacyListen is the subscription the bridge holds upstream for a 2025
// session: id is its upstream request id.
type legacyListen struct {
	id jsonrpc.ID
}

// listFilter is the subscription filter for every list change the
// capabilities caps (a DiscoverResult's) announce.
func listFilter(caps json.RawMessage) flow.Subscriptions {
	var c struct {
		Tools     *struct{ ListChanged bool } `json:"tools"`
		Prompts   *struct{ ListChanged bool } `json:"prompts"`
		Resources *struct{ ListChanged bool } `json:"resources"`
	}
	_ = json.Unmarshal(caps, &c) // none that read: nothing to ask for
	return flow.Subscriptions{
		ToolsListChanged:     c.Tools != nil && c.Tools.ListChanged,
		PromptsListChanged:   c.Prompts != nil && c.Prompts.ListChanged,
		ResourcesListChanged: c.Resources != nil && c.Resources.ListChanged,
	}
}

// listenForLegacy opens the 2025 session's subscription upstream, once the
// session is READY (ServerConfig.OnSession: no notification before the
// initialize result), asking for every list change the upstream's server/discover
// announced. It holds it for the session's life: it ends when the session
// does (its context), or when the upstream ends it (a graceful result, an
// error: logged, not reopened).
func (c *upConn) listenForLegacy() {
	want := listFilter(c.upCaps)
	if want.Empty() {
		return
	}
	p, _ := json.Marshal(map[string]any{"notifications": want})
	params, err := editMeta(p, modernMeta(c.clientCaps, c.clientInfo)...)
	if err != nil {
		return // our own params: cannot happen
	}
	l := &legacyListen{id: jsonrpc.Int64ID(c.nextID.Add(1))}
	c.mu.Lock()
	c.legacy = l
	c.mu.Unlock()
	go func() {
		ctx := c.s.Context()
		_, err := c.callAs(ctx, l.id, protocol.MethodListen, params)
		if ctx.Err() == nil {
			c.u.log.Warn("the upstream ended the subscription the bridge holds for a 2025 session: its list changes no longer reach it", "err", err)
		}
		c.mu.Lock()
		if c.legacy == l {
			c.legacy = nil
		}
		c.mu.Unlock()
	}()
}

// fromLegacyListen passes on n if it belongs to the subscription of
// listenForLegacy, and reports whether it did: the acknowledgement is the
// bridge's own; a change goes to the 2025 session without the
// subscription's _meta (EditMeta drops a _meta left empty), as a 2025 server sends it.
func (c *upConn) fromLegacyListen(sub json.RawMessage, n *jsonrpc.Request) bool {
	c.mu.Lock()
	l := c.legacy
	c.mu.Unlock()
	if l == nil || string(sub) != l.id.Raw() {
		return false
	}
	if n.Method == protocol.MethodSubscriptionsAcknowledged {
		c.u.log.Debug("upstream subscription for a 2025 session acknowledged", "params", string(n.Params))
		return true
	}
	p, err := mcpjson.EditMeta(n.Params, mcpjson.Delete(protocol.MetaSubscriptionID))
	if err != nil {
		return true // not an object: nothing a 2025 client could read either
	}
	_ = c.s.Notify(n.Method, json.RawMessage(p))
	return true
}
