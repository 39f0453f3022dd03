package upstream

import (
	"encoding/json"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The events of the subscription the bridge holds upstream for a 2025
// session (listen.go), turned into that session's 2025 notifications.

// fromLegacyListen takes n, a notification of a 2025 session's
// upstream that names a subscription (the bridge's own, relisten): the
// acknowledgement is the bridge's; a change of the current subscription
// goes to the session without the subscription's _meta (EditMeta drops a
// _meta left empty), as a 2025 server sends it; one of a subscription
// replaced or ended is dropped (its request may have ended before the
// upstream's last events were read; the new one was acknowledged before
// the subscribe that replaced it was answered: a list change in between
// is lost).
func (c *upConn) fromLegacyListen(sub json.RawMessage, n *jsonrpc.Request) {
	c.mu.Lock()
	l := c.legacy
	c.mu.Unlock()
	if l == nil || string(sub) != l.id.Raw() {
		c.u.log.Debug("upstream notification of an ended subscription dropped", "method", n.Method)
		return
	}
	if n.Method == protocol.MethodSubscriptionsAcknowledged {
		c.u.log.Debug("upstream subscription for a 2025 session acknowledged", "params", string(n.Params))
		l.ackOnce.Do(func() { close(l.acked) })
		return
	}
	p, err := mcpjson.EditMeta(n.Params, mcpjson.Delete(protocol.MetaSubscriptionID))
	if err != nil {
		return // not an object: nothing a 2025 client could read either
	}
	_ = c.s.Notify(n.Method, json.RawMessage(p))
}
