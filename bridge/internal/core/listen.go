package core

import (
	"encoding/json"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// SubscriptionTo is the call option of a client's subscriptions/listen
// (spec §11.7): each notification of the subscription goes to emit with
// its _meta subscriptionId made id, the client's own (the MCP-Flow call
// has an id of its own, and a TypeScript SDK v2 client matches its
// listen's acknowledgement by its id, a string). emit runs on the
// session's reading goroutine and must not block.
func SubscriptionTo(id jsonrpc.ID, emit func(*jsonrpc.Request)) flow.CallOption {
	return flow.WithNotifications(func(n *jsonrpc.Request) {
		params, err := mcpjson.EditMeta(n.Params, mcpjson.Set(protocol.MetaSubscriptionID, []byte(id.Raw())))
		if err != nil {
			return // params the session parsed already: cannot happen
		}
		emit(&jsonrpc.Request{Method: n.Method, Params: params})
	})
}

// ListenEnded is the graceful end of the client's subscriptions/listen id
// (spec §11.7): the result {_meta: {subscriptionId: id}}, as a server that
// shuts down answers it.
func ListenEnded(id jsonrpc.ID) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Result: json.RawMessage(`{"_meta":{"` + protocol.MetaSubscriptionID + `":` + id.Raw() + `}}`)}
}

// listening marks the host's request id as a subscriptions/listen until
// release, which it wraps, is called.
func (b *Core) listening(id jsonrpc.ID, release func()) func() {
	b.mu.Lock()
	b.listens[id.Raw()] = true
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		delete(b.listens, id.Raw())
		b.mu.Unlock()
		release()
	}
}

// endListens cancels the host's subscriptions/listen requests in flight.
func (b *Core) endListens() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range b.listens {
		if cancel := b.pending[id]; cancel != nil {
			cancel()
		}
	}
}
