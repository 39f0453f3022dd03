package mcpjson

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// The original block of a ref/stream (spec §10): the upstream bridge records
// the content block it replaced under OriginalKey, and a front's core puts
// the payload back (Restore) as it inlines the stream.

// OriginalKey is the _meta key of a ref/stream block that carries the
// content block it replaced, with its payload's value replaced by null (a
// placeholder that keeps the member's place), and the payload's field:
// "text", "data", "resource.text" or "resource.blob" (spec §10).
const OriginalKey = "io.mcp-flow/original"

// Restore puts payload back into an original block (OriginalKey) at field,
// in its place: the block's text is spliced, its members keep their order.
// A block without the field (an older bridge left it out) gets it last.
// The payload is written once, as a JSON string or base64, and the block
// is written only with the splice.
func Restore(block json.RawMessage, field string, payload []byte) (*Splice, error) {
	var val []byte
	switch field {
	case "text", "resource.text":
		val = appendQuote(nil, string(payload))
	case "data", "resource.blob":
		val = append(base64.StdEncoding.AppendEncode([]byte{'"'}, payload), '"')
	default:
		return nil, fmt.Errorf("unknown payload field %q", field)
	}
	outer, inner, _ := strings.Cut(field, ".")
	ms, err := ReadObject(block, func(n string) bool { return inner != "" && n == outer })
	if err != nil {
		return nil, fmt.Errorf("original block: %w", err)
	}
	obj, name := Member{Sub: ms, End: len(block)}, field
	if inner != "" {
		r := Find(ms, outer)
		if r == nil || r.Sub == nil {
			return nil, fmt.Errorf("original block has no %s object", outer)
		}
		obj, name = *r, inner
	}
	s := NewSplice(block)
	if m := Find(obj.Sub, name); m != nil {
		s.Replace(m.ValueStart(), m.End, val)
		return s, nil
	}
	brace := bytes.LastIndexByte(block[:obj.End], '}')
	key := appendQuote(nil, name)
	if len(obj.Sub) > 0 {
		key = append([]byte{','}, key...)
	}
	s.Replace(brace, brace, append(key, ':'))
	s.Replace(brace, brace, val)
	return s, nil
}
