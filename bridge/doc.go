// Package bridge connects plain MCP peers to MCP-Flow (spec §10, §11.6).
// A front takes a plain MCP client (a host on stdio, a Streamable HTTP
// client) to an MCP-Flow server; the upstream takes MCP-Flow clients to a
// plain MCP server (a process on stdio, a Streamable HTTP server).
//
// # Layout
//
// One package, its files named by job: core*.go and content.go are the
// front's core, front_*.go the fronts, upstream.go and up_*.go the upstream,
// and a few files are shared by both sides. Sub-packages were weighed and
// not taken: the two sides share the line and SSE readers, the waiters and
// the ref/stream original, which a bridge/upstream package would have to
// copy or import from a third package that exports them, and the public API
// (used by cmd/, bench/, interop/, internal/) would become aliases. Inside
// the package, calls go one way, file by file: a front calls the core and
// the shared files; the upstream calls the shared files; the core calls
// neither side by name, and reaches its client only through the front
// interface (core.go). No two files call each other (TestLayoutCallsOneWay).
// Within a side, a file calls only the files listed after it below.
//
// The front's core (one plain MCP client ↔ one MCP-Flow client session):
//   - core_dispatch.go: the client's messages and batches in its order,
//     requests called with their cancellation, notifications.
//   - core_stateless.go: a 2026-07-28 client: its era, the refusals, the
//     cache hints of its results.
//   - core_session.go: the MCP-Flow session: dial, watch, reconnect or
//     report the loss, the server's requests to the client, finish.
//   - core_dial.go: one dial of the server: the token, the WebTransport
//     dialect (draft-02 again on its refusal, remembered for reconnects).
//   - core_unreachable.go: a failed dial as one cause and its fix
//     (UnreachableError), and which causes retrying will not mend.
//   - content.go: results with execution streams rewritten as MCP content.
//   - core.go: the core type and its state; front, what a front implements.
//   - core_config.go: StdioConfig, the MCP-Flow side of every front.
//
// The fronts:
//   - sdk.go: the go-sdk adapters (ClientTransport over a stdio front;
//     ServeSDK, a go-sdk server as an upstream), above both sides.
//   - front_stdio.go: the stdio front (Stdio), its stream files.
//   - front_stdio_outbox.go: its bounded queue toward the host.
//   - front_http.go: the HTTP front (HTTPFront): config, checks, routing by
//     era, drain and close.
//   - front_http_2025.go: 2025 Streamable HTTP sessions (POST, initialize,
//     GET stream, resumption).
//   - front_http_legacy.go: the 2024-11-05 HTTP+SSE transport.
//   - front_http_stateless.go: 2026-07-28 clients, one holder each.
//   - front_http_download.go: offloaded streams served as downloads.
//   - front_http_route.go: an httpSession as its core's front: messages to
//     the core, and the core's to the right SSE stream.
//   - front_http_body.go: POST bodies within their budgets; JSON answers.
//   - front_http_session.go: httpSession, one client in any era: its life,
//     and the front's table of sessions.
//   - front_http_files.go: a session's offloaded files and their removal.
//   - front_http_hosts.go: the front's names (Host checks, endpoint URL) and
//     who a client is.
//   - front_http_auth.go: its clients' tokens (HTTPConfig.Auth), sessions
//     bound to subjects, and the credential a session dials with
//     (PassToken); its resource metadata.
//
// The upstream (one MCP-Flow server session ↔ one plain MCP server):
//   - up_process.go: stdio processes (StdioUpstreamConfig): start, cap,
//     stop, reap; up_process_unix.go, up_process_other.go: process groups.
//   - up_pipe.go: NDJSON over a pair of pipes (NewPipeUpstream).
//   - up_http_send.go, up_http_read.go, up_http.go: our own Streamable HTTP
//     client: sending, per era; answers, SSE streams and the HTTP+SSE
//     fallback; its config (HTTPUpstreamConfig), state and requests.
//   - upstream.go: Upstream, its hooks on a flow.ServerConfig, and handle.
//   - up_init.go: a session's connection opened, its handshake, the probe.
//   - up_offload.go: large content moved onto execution streams.
//   - up_conn.go: a session's connection: link, queue, writer, calls.
//   - up_era.go: translation between the 2025 and 2026-07-28 eras.
//
// Shared by both sides: original.go (OriginalKey and restore), framing.go
// (the stdio framings and the one line reader), sse.go (the front's SSE
// event log and the upstream's SSE reader), waiters.go (responses matched
// to requests). Reading and editing MCP JSON without reordering members
// (content blocks and their spans, ref/stream, progressToken, _meta) is
// package mcpjson's.
package bridge
