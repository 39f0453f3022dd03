// Package bridge connects plain MCP peers to MCP-Flow (spec §10, §11.6).
// A front takes a plain MCP client (a host on stdio, a Streamable HTTP
// client) to an MCP-Flow server; the upstream takes MCP-Flow clients to a
// plain MCP server (a process on stdio, a Streamable HTTP server).
//
// This package is the public API (api.go: the constructors and configs of
// the fronts and the upstream, as aliases of the packages that implement
// them) and the go-sdk adapters by their old names (sdk.go:
// ClientTransport and ServeSDK, thin wrappers over package sdkflow). Its
// tests are the fronts' end-to-end suite and the tests that cross both
// sides (a go-sdk chain, TestParseCost), through this API against
// in-process servers and the real binaries; the upstream's own are in its
// package, each package's internal tests beside its code.
//
// # Which package for which job
//
//   - internal/core: the front's core, one plain MCP client ↔ one MCP-Flow
//     client session (dial, reconnect, calls with cancellation, the
//     server's requests, results with execution streams made MCP
//     content); StdioConfig; the Front interface every front implements.
//     Open it for anything a front does whatever its transport.
//   - internal/stdiofront: the stdio front (Stdio).
//   - internal/httpfront: the Streamable HTTP front (HTTPFront), its three
//     eras (era_2025.go, era_legacy.go for 2024-11-05, era_stateless.go for
//     2026-07-28), its SSE event log, downloads and client tokens.
//   - internal/upstream: the upstream (Upstream): stdio processes, pipes,
//     our own Streamable HTTP client, the translation between eras.
//   - internal/running: Count, what a side started and has not finished
//     (a WaitGroup whose Add may come while Wait waits); it imports none.
//   - sdkflow: the go-sdk transport: a go-sdk client's connection on a
//     core, a go-sdk server's on an upstream, message by message; public,
//     so that a go-sdk program imports it alone.
//   - plainio: what both sides and fallback's relay read and write: the
//     stdio framings, the one line reader, the SSE parser, the waiters.
//     Not internal, so that fallback can use it.
//
// MCP JSON read and edited without reordering members (content blocks and
// their spans, ref/stream and the original block under OriginalKey,
// progressToken, _meta) is package mcpjson's.
//
// # Layout
//
// The packages were the file prefixes of one package (core*.go, front_*.go,
// up_*.go); the compiler now holds the sides apart. A front imports the
// core and plainio, never the upstream or the other front; the upstream
// imports plainio alone (and running, as the HTTP front does); the core no
// side, and reaches its client only through Front; plainio no bridge
// package; sdkflow the core and the upstream, and only bridge imports it.
// TestLayoutImportsOneWay checks
// that import graph with go list (and that fallback depends on no bridge
// package but plainio), and TestLayoutCallsOneWay that inside each package
// no two files call each other; each package's doc lists its files so that
// a file calls only files listed after it. The sides' packages are
// internal: what they export to each other (Core's methods, Front) is not
// API, and callers (cmd/, interop/, internal/) keep importing bridge alone.
package bridge
