package codec

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// Negotiate picks the encoding of a session (spec §4.1): the first of the
// client's encodings, in its order of preference, that the server supports.
// A client that names none gets json. A client that names some, none of
// which the server supports, gets an error (answered -32602) rather than an
// encoding it did not offer: it may not be able to read it.
func Negotiate(clientPrefs []string, supported []Name) (Name, error) {
	if len(clientPrefs) == 0 {
		return JSON, nil
	}
	for _, p := range clientPrefs {
		if n := Name(p); slices.Contains(supported, n) {
			return n, nil
		}
	}
	names := make([]string, len(supported))
	for i, n := range supported {
		names[i] = string(n)
	}
	return "", fmt.Errorf("none of the offered encodings (%s) is supported; this server supports %s",
		strings.Join(clientPrefs, ", "), strings.Join(names, ", "))
}

// Detect reports whether data, which did not decode in the negotiated
// encoding, is a JSON-RPC payload in another encoding (spec §4.3: -32003
// rather than -32700), and returns that payload, so that nothing decodes it
// twice. It is strict: the payload must decode, and a message in it must
// carry "jsonrpc": "2.0", so random bytes do not pass for protobuf.
//
// When no other encoding decodes data but one of them refused it for a
// limit (a CBOR batch past MaxBatch in a JSON session, say), Detect returns
// that *DecodeError as limitErr, which says more than the negotiated
// encoding's syntax error.
//
// codecs gives the codec of each encoding, with the session's limits, which
// bound every decoding Detect tries; nil means DefaultLimits.
func Detect(data []byte, negotiated Name, codecs map[Name]Codec) (n Name, p jsonrpc.Payload, limitErr error) {
	for _, n := range Names {
		if n == negotiated {
			continue
		}
		c := codecs[n]
		if c == nil {
			c = Default(n)
		}
		p, err := c.Decode(data)
		if err != nil {
			var le *LimitError
			if limitErr == nil && errors.As(err, &le) {
				limitErr = err
			}
			continue
		}
		for _, e := range p.Elems {
			if string(e.JSONRPC) == `"2.0"` {
				return n, p, nil
			}
		}
	}
	return "", jsonrpc.Payload{}, limitErr
}
