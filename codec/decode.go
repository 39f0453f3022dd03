package codec

import (
	"encoding/base64"
	"encoding/json"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// What the binary decoders (cbor_decode.go, protobuf_decode.go) share: the
// envelope of a message as spans of one output buffer, and the JSON text
// they write into it.

// envSpans records where an envelope's members lie in the shared output
// buffer, which may move while it grows; envelope makes the slices once it
// is final.
type envSpans struct {
	notObject bool
	spans     [6]span // jsonrpc, id, method, params, result, error
}

type span struct{ from, to int }

func (s span) of(buf []byte) json.RawMessage {
	if s.to == 0 {
		return nil
	}
	return buf[s.from:s.to:s.to]
}

func (e envSpans) envelope(buf []byte) jsonrpc.Envelope {
	if e.notObject {
		return jsonrpc.Envelope{NotObject: true}
	}
	sp := e.spans
	return jsonrpc.Envelope{JSONRPC: sp[0].of(buf), ID: sp[1].of(buf), Method: sp[2].of(buf),
		Params: sp[3].of(buf), Result: sp[4].of(buf), Error: sp[5].of(buf)}
}

// memberIndex maps a message key to its place in envSpans.spans.
func memberIndex(key []byte) int {
	switch string(key) {
	case "jsonrpc":
		return 0
	case "id":
		return 1
	case "method":
		return 2
	case "params":
		return 3
	case "result":
		return 4
	case "error":
		return 5
	}
	return -1
}

// quotedLen returns the length of s as a JSON string written by
// appendQuotedUTF8.
func quotedLen(s []byte) int {
	n := len(s) + 2
	for _, c := range s {
		switch {
		case c >= 0x20 && c != '"' && c != '\\':
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			n++
		default:
			n += 5
		}
	}
	return n
}

func appendBase64(dst []byte, enc *base64.Encoding, b []byte) []byte {
	dst = append(dst, '"')
	if enc == base64.StdEncoding {
		dst = appendStdBase64(dst, b)
	} else {
		dst = enc.AppendEncode(dst, b)
	}
	return append(dst, '"')
}

// appendQuotedUTF8 appends valid UTF-8 text as a JSON string in the same
// canonical form as jsonrpc.AppendQuoted, copying runs that need no escape in
// one go.
func appendQuotedUTF8(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	last := 0
	for i, c := range s {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[last:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		last = i + 1
	}
	dst = append(dst, s[last:]...)
	return append(dst, '"')
}
