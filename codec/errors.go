package codec

import (
	"strconv"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// DecodeError reports a payload that is malformed, or past a limit, in an
// encoding. It is answered with -32700 (spec §4.3).
type DecodeError struct {
	Encoding Name
	Offset   int // byte offset in the payload where it went wrong, -1 if unknown
	Reason   string
}

var _ error = (*DecodeError)(nil)

func (e *DecodeError) Error() string {
	s := "codec: malformed " + string(e.Encoding) + " payload"
	if e.Offset >= 0 {
		s += " at byte " + strconv.Itoa(e.Offset)
	}
	return s + ": " + e.Reason
}

// Code returns the JSON-RPC code a DecodeError is answered with.
func (e *DecodeError) Code() jsonrpc.Code { return jsonrpc.CodeParseError }

// EncodeError reports a value that an encoding cannot carry (a JSON number
// whose exponent does not fit 64 bits, for instance).
type EncodeError struct {
	Encoding Name
	Reason   string
}

var _ error = (*EncodeError)(nil)

func (e *EncodeError) Error() string {
	return "codec: cannot encode in " + string(e.Encoding) + ": " + e.Reason
}
