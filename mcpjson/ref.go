package mcpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/mcp-flow/mcp-flow/protocol"
)

// Ref is the content block that names an execution stream in a result
// (spec §5.2): {"type":"ref/stream","streamTag":1,"mimeType":"text/plain"},
// with the _meta a block may carry (an upstream bridge records there the
// block the ref replaced, spec §10). AppendRef writes it and ParseRef and
// Refs read it: its JSON methods use them.
type Ref struct {
	// Type is "ref/stream" (protocol.ContentTypeRef): AppendRef writes that
	// whatever it holds.
	Type      string
	StreamTag uint32
	// MimeType is left out of the block when empty.
	MimeType string
	// Meta is the block's _meta as written; nil when it has none.
	Meta json.RawMessage
	// Start and End are the block's span in the result it was read from
	// (Refs); zero for a ref read or made otherwise.
	Start, End int
}

// AppendRef appends r as a ref/stream block: type, streamTag, mimeType (when
// not empty) and _meta (when not nil), in that order.
func AppendRef(dst []byte, r Ref) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendQuote(dst, protocol.ContentTypeRef)
	dst = strconv.AppendUint(append(dst, `,"streamTag":`...), uint64(r.StreamTag), 10)
	if r.MimeType != "" {
		dst = appendQuote(append(dst, `,"mimeType":`...), r.MimeType)
	}
	if r.Meta != nil {
		dst = append(append(dst, `,"_meta":`...), r.Meta...)
	}
	return append(dst, '}')
}

// MarshalJSON writes r with AppendRef.
func (r Ref) MarshalJSON() ([]byte, error) { return AppendRef(nil, r), nil }

// UnmarshalJSON reads a ref/stream block with ParseRef; any other content
// is an error.
func (r *Ref) UnmarshalJSON(b []byte) error {
	ref, ok := ParseRef(b)
	if !ok {
		return errors.New("mcpjson: not a ref/stream block")
	}
	*r = ref
	return nil
}

// ParseRef reads block as a ref/stream block (spec §5.2). ok is false for
// any other content, and for a ref/stream block without a streamTag that
// fits 32 bits.
func ParseRef(block []byte) (r Ref, ok bool) {
	ms, err := ReadObject(block, nil)
	if err != nil {
		return Ref{}, false
	}
	return refOf(Block{Members: ms})
}

// refOf reads b, a block of a result, as a ref/stream block.
func refOf(b Block) (Ref, bool) {
	if String(b.Members, "type") != protocol.ContentTypeRef {
		return Ref{}, false
	}
	r := Ref{Type: protocol.ContentTypeRef, MimeType: String(b.Members, "mimeType"), Start: b.Start, End: b.End}
	tag := Find(b.Members, "streamTag")
	if tag == nil {
		return Ref{}, false
	}
	n, err := strconv.ParseUint(string(tag.Value), 10, 32)
	if err != nil {
		return Ref{}, false
	}
	r.StreamTag = uint32(n)
	if m := Find(b.Members, metaName); m != nil {
		r.Meta = json.RawMessage(m.Value)
	}
	return r, true
}

// MentionsRef reports whether result's text names the ref/stream type at
// all (as written, or with its solidus escaped): a result that does not
// has no ref/stream block, and Refs need not read it. It is one search
// through the text for "/stream" (memory speed, nothing decoded), each hit
// checked for "ref" or "ref\" before it; a client pays it for every result,
// where Refs would tokenize the whole result.
func MentionsRef(result []byte) bool {
	for rest := result; ; {
		i := bytes.Index(rest, []byte("/stream"))
		if i < 0 {
			return false
		}
		if before := rest[:i]; bytes.HasSuffix(before, []byte("ref")) || bytes.HasSuffix(before, []byte(`ref\`)) {
			return true
		}
		rest = rest[i+1:]
	}
}

// Refs returns the ref/stream blocks of result's content array, in order,
// each with its span in result (spec §5.2). The result is read once
// (ReadContent); no block is unmarshalled, and blocks of other types are
// only skipped.
func Refs(result []byte) ([]Ref, error) {
	var refs []Ref
	err := ReadContent(result, nil, func(b Block) error {
		if r, ok := refOf(b); ok {
			refs = append(refs, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}
