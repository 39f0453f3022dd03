// Package flow runs MCP-Flow 0.1 sessions over WebTransport (docs/spec.md):
// one Session type for both roles, made by Dial on a client and by a Server
// (NewServer) for each client it accepts.
//
// A session has one control stream, opened by the client, that carries
// JSON-RPC messages as length-prefixed frames (spec §3.1): initialize and its
// result in JSON, every later frame in the encoding they negotiated (spec §4).
// Large results leave it on execution streams that the server opens and a
// result names with ref/stream content (spec §5); progress, audio and logs go
// as datagrams when both sides allow them (spec §6). $/cancel ends one request
// and $/shutdown drains the whole session (spec §7). Every limit has a
// documented default (Limits, spec §8).
//
// A server checks access tokens (spec §9.1) through an interface it is
// given, ServerConfig.Auth (an Authenticator; package bearer's Config for
// OAuth bearer tokens), and a session keeps what the token said as flow's
// own TokenInfo; a client's token is a function, ClientConfig.Token. So flow
// links no token library (go-oidc, go-jose, x/oauth2, the go-sdk's auth).
//
// Errors are typed by scope: *SessionError (the session is over),
// *StreamError (one execution stream), *jsonrpc.Error (one request).
//
// The names on the wire (methods, transport type, MCP revisions) are in
// package protocol, the encodings in package codec, the byte layouts in
// package wire; docs/design.md explains how the package is cut.
package flow
