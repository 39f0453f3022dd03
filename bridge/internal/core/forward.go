package core

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The server's requests to the client (sampling, roots, elicitation; spec
// §10).

// forwardToHost sends the server's request (sampling, roots, elicitation)
// to the host under an id of the bridge's own, and returns its answer.
func (b *Core) forwardToHost(ctx context.Context, req *flow.Request) (any, error) {
	if b.isStateless() {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "a 2026-07-28 client takes no requests from the server (it asks for input with input_required results, spec §11.6)")
	}
	id := jsonrpc.StringID(fmt.Sprintf("mcp-flow-%d", b.hostID.Add(1)))
	ch, forget := b.hostWait.Add(id)
	defer forget()
	b.log.Debug("server request to the host", "method", req.Method, "id", id.String())
	b.write(&jsonrpc.Request{ID: id, Method: req.Method, Params: req.Params})
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodCancelled, map[string]any{"requestId": json.RawMessage(id.Raw())})
		b.write(n)
		return nil, ctx.Err()
	}
}
