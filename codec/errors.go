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
	Err      error // the cause when there is one: a *LimitError for a payload past a limit
}

var _ error = (*DecodeError)(nil)

func decodeErr(enc Name, off int, err error) *DecodeError {
	return &DecodeError{Encoding: enc, Offset: off, Reason: err.Error(), Err: err}
}

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

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
	Err      error // the cause when there is one: a *LimitError for a value past a limit
}

// Unwrap returns the cause.
func (e *EncodeError) Unwrap() error { return e.Err }

// LimitError reports a payload or value past one of the Limits (spec §8); a
// DecodeError or an EncodeError wraps it.
type LimitError struct {
	Limit string // the Limits field: "MaxDepth", "MaxElements", "MaxBatch", "MaxNumberDigits", "MaxDecoded"
	Max   int    // its value
	msg   string
}

var _ error = (*LimitError)(nil)

func (e *LimitError) Error() string { return e.msg + " (limit " + e.Limit + ")" }

var _ error = (*EncodeError)(nil)

func (e *EncodeError) Error() string {
	return "codec: cannot encode in " + string(e.Encoding) + ": " + e.Reason
}

// encodeErr names enc in an encoding error.
func encodeErr(enc Name, err error) error {
	if e, ok := err.(*EncodeError); ok {
		e.Encoding = enc
		return e
	}
	return &EncodeError{Encoding: enc, Reason: err.Error(), Err: err}
}
