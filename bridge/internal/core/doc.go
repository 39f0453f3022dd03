// Package core is the front-neutral half of every front (spec §10, §11.6):
// one plain MCP client ↔ one MCP-Flow client session. A front (package
// stdiofront, httpfront) reads its client, hands each message to its Core
// (Receive, Dispatch, Answer), and implements Front, the one way the core
// reaches the client: Emit, EmitBatch, EmitResult, Offload (and Keeper,
// for a front that hands raw execution streams on as they are). The core
// imports no front and no upstream, only plainio.
//
// Files, each calling only files listed after it where it calls one at all
// (no two files call each other: bridge's TestLayoutCallsOneWay):
//   - dispatch.go: the client's messages and batches in its order,
//     requests called with their cancellation on the session they go on
//     (current), notifications.
//   - stateless.go: a 2026-07-28 client: its era, the refusals, the cache
//     hints of its results; stateless_session.go: its MCP-Flow session,
//     dialled on demand.
//   - session.go: the MCP-Flow session: dial, watch, reconnect or report
//     the loss, finish (Finish).
//   - forward.go: the server's requests to the client.
//   - listen.go: a client's subscriptions/listen, its notifications
//     named by the client's id (SubscriptionTo, spec §11.7).
//   - lost.go: a lost session's error (ServerLostError) as the client
//     gets it.
//   - dial.go: one dial of the server: the token, the WebTransport dialect
//     (draft-02 again on its refusal, remembered for reconnects).
//   - unreachable.go: a failed dial as one cause and its fix
//     (UnreachableError, Diagnose), and which causes retrying will not
//     mend.
//   - content.go: results with execution streams rewritten as MCP content
//     (an upstream's original block back through mcpjson.Restore), or a
//     raw stream named by a resource_link for a Keeper front.
//   - core.go: Core and its state; Front, what a front implements.
//   - config.go: StdioConfig, the MCP-Flow side of every front.
package core
