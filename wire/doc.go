// Package wire holds the byte layouts of MCP-Flow 0.1 (spec §3): control
// stream frames, execution stream headers and datagram headers. All
// multi-byte integers are big-endian (guide §2).
//
// The package knows nothing of QUIC, WebTransport or encodings: it reads and
// writes bytes. Every parser checks a length against its limit before it
// allocates anything.
package wire
