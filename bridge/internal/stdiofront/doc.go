// Package stdiofront is the stdio front (spec §10): an MCP host spawns
// mcp-flow as its stdio server, and Stdio takes the host's messages from
// stdin, in either framing (plainio), to its core, and the core's answers
// to stdout through a bounded queue; execution streams past the inline
// limit go to files.
//
//   - stdio.go: Stdio, its reader and writer, its stream files.
//   - outbox.go: the bounded queue toward the host (spec §10,
//     "Backpressure").
package stdiofront
