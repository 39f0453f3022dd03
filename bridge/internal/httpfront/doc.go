// Package httpfront is the Streamable HTTP front (spec §10, §11.6): plain
// MCP clients over HTTP, each with a core of its own, in any of three eras:
// 2025 Streamable HTTP sessions, the 2024-11-05 HTTP+SSE transport, and
// 2026-07-28 stateless clients.
//
// Files, each calling only files listed after it where it calls one at all:
//   - front.go: HTTPFront: checks, routing by era, drain and close;
//     config.go: HTTPConfig and its defaults, CheckPublicURL.
//   - era_2025.go: 2025 Streamable HTTP sessions (POST, initialize, GET
//     stream, resumption).
//   - era_legacy.go: the 2024-11-05 HTTP+SSE transport.
//   - era_stateless.go: 2026-07-28 clients, one holder each.
//   - download.go: offloaded streams served as downloads.
//   - route.go: an httpSession as its core's Front: messages to the core,
//     and the core's to the right SSE stream.
//   - body.go: POST bodies within their budgets; JSON answers.
//   - session.go: httpSession, one client in any era: its life, and the
//     front's table of sessions.
//   - files.go: a session's offloaded files and their removal.
//   - hosts.go: the front's names (Host checks, endpoint URL) and who a
//     client is.
//   - auth.go: its clients' tokens (HTTPConfig.Auth), sessions bound to
//     subjects, and the credential a session dials with (PassToken); its
//     resource metadata.
//   - sse.go: the event log an SSE stream is served from, with its replay
//     window and held-bytes budget.
package httpfront
