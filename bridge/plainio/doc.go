// Package plainio reads and writes the transports of plain MCP (spec §10):
// the stdio framings (newline-delimited JSON, and Content-Length headers as
// in LSP), the one bounded line reader, the Server-Sent Events parser
// (WHATWG HTML §9.2), and the matching of responses to the requests a
// bridge sent (Waiters). Both sides of the bridge use it, and so does
// fallback's relay; it imports no other bridge package.
//
//   - framing.go: Framing, FrameReader (either framing, detected per
//     message), AppendFramed; ReadLine and ReadLineEnds (the one line
//     reader, bounded: ErrLineTooLong, then SkipLine); MaxMessage.
//   - sse.go: SSEReader, an event stream's events (the HTTP upstream's).
//   - waiters.go: Waiters, responses matched to requests by id.
package plainio
