// Package upstream is the bridge's other side (spec §10): one MCP-Flow
// server session ↔ one plain MCP server, a process on stdio, a go-sdk
// server in process (over pipes, or message by message), or a Streamable
// HTTP server. Upstream configures a flow.ServerConfig; it imports no
// front, only plainio.
//
// Files, each calling only files listed after it where it calls one at all:
//   - process.go: stdio processes (StdioUpstreamConfig): start, cap, stop,
//     reap; process_unix.go, process_other.go: process groups.
//   - pipe.go: NDJSON over a pair of pipes (NewPipeUpstream).
//   - link.go: an in-process server's messages as they are, no framing
//     (NewLinkUpstream: package bridge/sdkflow's go-sdk server).
//   - http_send.go, http_read.go, http.go: our own Streamable HTTP client:
//     sending, per era; answers, SSE streams and the HTTP+SSE fallback;
//     its config (HTTPUpstreamConfig), state and requests.
//   - upstream.go: Upstream, its hooks on a flow.ServerConfig, and handle.
//   - rawout.go: the raw streams an in-process server's result names
//     (Link.Raw), sent as they are on execution streams.
//   - init.go: a session's connection opened, its handshake, the probe.
//   - offload.go: large content moved onto execution streams, the block
//     it replaced kept under mcpjson.OriginalKey.
//   - listen.go: the subscription held upstream for a 2025 session of a
//     2026-07-28 upstream, and its resources/subscribe.
//   - conn.go: a session's connection: link, queue, writer, calls.
//   - events.go: that subscription's events, as the session's 2025
//     notifications.
//   - era.go: translation between the 2025 and 2026-07-28 eras.
package upstream
