package jsonrpc

import (
	"strconv"
	"unicode/utf8"
)

// ID is a JSON-RPC 2.0 request id (§4): an integer or a string, kept in its
// exact canonical JSON form. The integer 1 and the string "1" are different
// ids, and integers of any size stay exact (they are never routed through
// float64). The zero ID is absent: a request without one is a notification.
//
// ID is comparable and may be used as a map key.
type ID struct {
	raw string // canonical JSON text; "" when absent
}

// NullID is the id of a response to a request whose id could not be
// determined (JSON-RPC 2.0 §5).
var NullID = ID{raw: "null"}

// Int64ID returns the integer id n.
func Int64ID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// Uint32ID returns the integer id n. MCP-Flow stream and datagram headers carry
// such ids (spec §3.3).
func Uint32ID(n uint32) ID { return ID{raw: strconv.FormatUint(uint64(n), 10)} }

// StringID returns the string id s.
func StringID(s string) ID { return ID{raw: string(appendQuoted(nil, s))} }

// IsValid reports whether the id is present.
func (id ID) IsValid() bool { return id.raw != "" }

// IsNull reports whether the id is JSON null.
func (id ID) IsNull() bool { return id.raw == "null" }

// IsString reports whether the id is a string.
func (id ID) IsString() bool { return len(id.raw) > 0 && id.raw[0] == '"' }

// IsInteger reports whether the id is an integer.
func (id ID) IsInteger() bool {
	return len(id.raw) > 0 && (id.raw[0] == '-' || id.raw[0] >= '0' && id.raw[0] <= '9')
}

// Raw returns the id's canonical JSON text, or "" when absent.
func (id ID) Raw() string { return id.raw }

// String returns the id's JSON text, or "<none>" when absent.
func (id ID) String() string {
	if id.raw == "" {
		return "<none>"
	}
	return id.raw
}

// Uint32 returns the id as a 32-bit unsigned integer, if it is an integer in
// [0, 2^32-1]: the ids that MCP-Flow stream and datagram headers can name.
func (id ID) Uint32() (uint32, bool) {
	if !id.IsInteger() {
		return 0, false
	}
	n, err := strconv.ParseUint(id.raw, 10, 32)
	return uint32(n), err == nil
}

// Int64 returns the id as an int64 if it is an integer that fits.
func (id ID) Int64() (int64, bool) {
	if !id.IsInteger() {
		return 0, false
	}
	n, err := strconv.ParseInt(id.raw, 10, 64)
	return n, err == nil
}

// Str returns the string value of a string id.
func (id ID) Str() (string, bool) {
	if !id.IsString() {
		return "", false
	}
	s, ok := unquote([]byte(id.raw))
	return s, ok
}

// MarshalJSON implements json.Marshaler. An absent id marshals as null.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// UnmarshalJSON implements json.Unmarshaler with the rules of [ParseID].
func (id *ID) UnmarshalJSON(b []byte) error {
	v, err := ParseID(b)
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// ParseID parses the JSON text of an id member. It accepts a string, an integer
// (any size, no fraction or exponent, not -0) or null, and returns the id in
// canonical form (strings re-quoted minimally). Anything else is an
// [*Error] with [CodeInvalidRequest]: MCP forbids fractional ids, and MCP-Flow
// needs ids that survive every encoding exactly.
func ParseID(b []byte) (ID, error) {
	b = trimSpace(b)
	if len(b) == 0 {
		return ID{}, &Error{Code: CodeInvalidRequest, Message: "empty id"}
	}
	switch c := b[0]; {
	case c == 'n':
		if string(b) == "null" {
			return NullID, nil
		}
	case c == '"':
		s, ok := unquote(b)
		if ok {
			return StringID(s), nil
		}
	case c == '-' || c >= '0' && c <= '9':
		if isCanonicalInteger(b) {
			return ID{raw: string(b)}, nil
		}
		return ID{}, &Error{Code: CodeInvalidRequest, Message: "id must be a string or an integer, not " + clip(b)}
	}
	return ID{}, &Error{Code: CodeInvalidRequest, Message: "id must be a string or an integer, not " + clip(b)}
}

// isCanonicalInteger reports whether b is a JSON integer without fraction or
// exponent, other than -0.
func isCanonicalInteger(b []byte) bool {
	d := b
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return !(b[0] == '-' && d[0] == '0')
}

func clip(b []byte) string {
	const max = 32
	if len(b) > max {
		b = b[:max]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
		return string(b) + "…"
	}
	return string(b)
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
