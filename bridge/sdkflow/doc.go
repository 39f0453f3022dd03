// Package sdkflow is MCP-Flow as a transport of the official Go SDK
// (github.com/modelcontextprotocol/go-sdk, v1.8): a go-sdk client reaches
// an MCP-Flow server by swapping its transport for a ClientTransport, and a
// go-sdk server is served over MCP-Flow by Serve on a flow.ServerConfig.
//
// Messages pass as the go-sdk's jsonrpc.Message values on one side and
// package jsonrpc's on the other, field by field (convert.go): no NDJSON,
// no pipe. What plain MCP lacks is translated as the bridges translate it
// (spec §10), by the bridges' own code: the client side is a front's core
// (package bridge/internal/core) whose front is the go-sdk connection
// (client.go: execution streams inlined into their results, progress as
// notifications, notifications/cancelled as $/cancel, the server's
// requests to the client's handlers); the server side is an upstream
// (package bridge/internal/upstream, NewLinkUpstream) whose link is the
// go-sdk server session's connection (server.go: large content onto
// execution streams, $/cancel as notifications/cancelled, progress as the
// session sends it, $/shutdown and the session's end closing the go-sdk
// session). inbox.go holds the messages for the client's Read.
//
// Raw streams (spec §10): a tool's bytes on an execution stream as they
// are, no base64 and no JSON string at either end. rawserve.go: the
// server's StreamResult (inline content over the go-sdk's other
// transports); rawread.go: the client's KeepStreams and OpenStream.
package sdkflow
