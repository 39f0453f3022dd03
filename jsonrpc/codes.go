package jsonrpc

// Code is a JSON-RPC 2.0 error code as it appears in an error object.
//
// Every code used anywhere in MCP-Flow is defined here and only here. Three
// specifications contribute codes:
//
//   - JSON-RPC 2.0 §5.1: -32700 and -32600..-32603.
//   - MCP (2025-11-25, and the report in seeds/003 §6.3): -32800 cancelled,
//     -32801 content too large, -32002 resource not found.
//   - MCP-Flow 0.1 (guide §4.2): -32000..-32004.
//
// Two clashes follow from this and are resolved in docs/spec.md:
//
//   - The guide (§6) answers a cancelled request with -32000, which §4.2 already
//     gives to Stream Limit Exceeded. MCP-Flow answers cancellation with
//     [CodeRequestCancelled] (-32800) and keeps -32000 for the stream limit.
//   - -32002 is MCP's "resource not found" (a reply to resources/read) and
//     MCP-Flow's "stream injection". They never meet on the same message: stream
//     injection is reported about an execution stream (a stream reset with
//     [CodeStreamInjection] and, at most, a $/streamError), never as the reply
//     to a resources/read request, so an MCP client never mistakes one for the
//     other.
type Code int64

// JSON-RPC 2.0 §5.1.
const (
	CodeParseError     Code = -32700 // invalid JSON (or CBOR, protobuf) was received
	CodeInvalidRequest Code = -32600 // not a valid request object; also an unknown transport type
	CodeMethodNotFound Code = -32601
	CodeInvalidParams  Code = -32602
	CodeInternalError  Code = -32603
)

// MCP (seeds/003 §6.3).
const (
	CodeRequestCancelled Code = -32800 // MCP-Flow's answer to $/cancel (errata of guide §6)
	CodeContentTooLarge  Code = -32801
	CodeResourceNotFound Code = -32002 // resources/read; shares its value with CodeStreamInjection
)

// MCP-Flow 0.1 (guide §4.2).
const (
	CodeStreamLimitExceeded   Code = -32000 // more execution streams than maxConcurrentStreams
	CodeInvalidStreamRef      Code = -32001 // a ref/stream streamTag that names no stream
	CodeStreamInjection       Code = -32002 // a stream header naming no request in flight
	CodeEncodingMismatch      Code = -32003 // a frame not in the negotiated encoding
	CodeDatagramsNotSupported Code = -32004 // datagrams sent where datagramsSupported is false
)

// String returns the code's name, or "code N" for a code not defined here.
func (c Code) String() string {
	switch c {
	case CodeParseError:
		return "Parse error"
	case CodeInvalidRequest:
		return "Invalid Request"
	case CodeMethodNotFound:
		return "Method not found"
	case CodeInvalidParams:
		return "Invalid params"
	case CodeInternalError:
		return "Internal error"
	case CodeRequestCancelled:
		return "Request cancelled"
	case CodeContentTooLarge:
		return "Content too large"
	case CodeStreamLimitExceeded:
		return "Stream limit exceeded"
	case CodeInvalidStreamRef:
		return "Invalid stream reference"
	case CodeStreamInjection:
		return "Stream injection (or resource not found)"
	case CodeEncodingMismatch:
		return "Encoding mismatch"
	case CodeDatagramsNotSupported:
		return "Datagrams not supported"
	case CodeTooManyRequests:
		return "Too many requests in flight"
	case CodeShuttingDown:
		return "Session shutting down"
	}
	return "code " + itoa(int64(c))
}

func itoa(n int64) string {
	var b [20]byte
	return string(appendInt(b[:0], n))
}

// Implementation-defined codes of this project, from the JSON-RPC 2.0
// server-error range (-32000..-32099) next to MCP-Flow's own (spec §8.1).
const (
	CodeTooManyRequests Code = -32005 // more requests in flight than the session allows
	CodeShuttingDown    Code = -32006 // a request arrived after $/shutdown; retry on a new session
)
