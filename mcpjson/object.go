// Package mcpjson reads and edits the JSON text of MCP messages without
// reordering their members: each message is parsed once on its way
// through a hop, and what is not changed keeps its bytes (spec §10, "every
// other byte of the result is passed on as it came").
//
// It owns the rules that more than one package reads or writes: the
// blocks of a result's content array with their byte spans (ReadContent),
// the ref/stream block (Ref, spec §5.2), _meta.progressToken (MCP progress,
// spec §6.2), edits of _meta (EditMeta, spec §11.5 and §11.6), the
// resultType of 2026-07-28 results (WithResultType, spec §11.5) and the
// original block a bridge's ref/stream carries (OriginalKey, Restore, spec
// §10). Spans are spliced (Splice), never re-marshalled through maps.
//
// Every function takes JSON text as a codec hands it out (valid, as
// package codec checks) and reads it with jsontext, so malformed text is an
// error, never a panic. Nothing is copied that is not changed: returned
// members and values are slices of the input.
package mcpjson

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// Member is one member of a JSON object as it is written.
type Member struct {
	// Name is the member's name, unescaped.
	Name string
	// Key is the name as written, through the colon; Value is the value as
	// written. Both are slices of the text read.
	Key, Value []byte
	// Sub holds the value's members when the value is an object that
	// ReadObject was asked to descend into (non-nil then, even for {}).
	Sub []Member
	// Start and End are the member's span in the text read, from its name
	// to the end of its value.
	Start, End int
}

// ValueStart returns where m's value begins in the text read.
func (m *Member) ValueStart() int { return m.End - len(m.Value) }

// ReadObject reads data, which must be one JSON object, member by member.
// A member whose name descend accepts and whose value is an object is read
// member by member too (Sub). Nothing is copied.
func ReadObject(data []byte, descend func(name string) bool) ([]Member, error) {
	ms, _, _, err := readWhole(data, descend)
	return ms, err
}

// readWhole reads data as ReadObject does, and returns the object's span.
func readWhole(data []byte, descend func(name string) bool) (ms []Member, start, end int, err error) {
	p := decoders.Get().(*pooledDecoder)
	defer p.put()
	d := p.reset(data)
	if ms, start, end, err = readObject(d, data, descend); err != nil {
		return nil, 0, 0, err
	}
	if err := atEnd(d); err != nil {
		return nil, 0, 0, err
	}
	return ms, start, end, nil
}

// newDecoder returns a decoder over data. It reads data in place (values
// are slices of it), since jsontext reads a *bytes.Buffer without a copy.
func newDecoder(data []byte) *jsontext.Decoder {
	return jsontext.NewDecoder(bytes.NewBuffer(data))
}

// pooledDecoder is a decoder kept for the next readWhole (decoders): each
// request's params are read several times on its way (its _meta, its
// edits), and a decoder and its name stacks cost more to make than to read
// a small object with.
type pooledDecoder struct {
	buf bytes.Buffer
	d   *jsontext.Decoder
}

var decoders = sync.Pool{New: func() any {
	p := &pooledDecoder{}
	p.d = jsontext.NewDecoder(&p.buf)
	return p
}}

// reset points the decoder at data, which it reads in place.
func (p *pooledDecoder) reset(data []byte) *jsontext.Decoder {
	p.buf = *bytes.NewBuffer(data)
	p.d.Reset(&p.buf)
	return p.d
}

// put lets go of the data read and returns p to decoders.
func (p *pooledDecoder) put() {
	p.reset(nil)
	decoders.Put(p)
}

// atEnd reports an error unless d has read all of its input.
func atEnd(d *jsontext.Decoder) error {
	if _, err := d.ReadToken(); err != io.EOF {
		return errors.New("mcpjson: data after the JSON value")
	}
	return nil
}

// errNotObject is the error for a JSON value that must be an object.
var errNotObject = errors.New("mcpjson: not a JSON object")

// readObject reads the object at d's position member by member; data is
// what d reads, from its start. It returns the members and the object's
// span in data.
func readObject(d *jsontext.Decoder, data []byte, descend func(name string) bool) (ms []Member, start, end int, err error) {
	if d.PeekKind() != '{' {
		if _, err := d.ReadValue(); err != nil {
			return nil, 0, 0, err
		}
		return nil, 0, 0, errNotObject
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, 0, 0, err
	}
	start = int(d.InputOffset()) - 1
	ms = make([]Member, 0, 4) // non-nil: an object read member by member has Sub != nil
	for d.PeekKind() != '}' {
		m, err := readMember(d, data, descend)
		if err != nil {
			return nil, 0, 0, err
		}
		ms = append(ms, m)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, 0, 0, err
	}
	return ms, start, int(d.InputOffset()), nil
}

// readMember reads one member of the object d is in.
func readMember(d *jsontext.Decoder, data []byte, descend func(name string) bool) (Member, error) {
	n, err := d.ReadValue()
	if err != nil {
		return Member{}, err
	}
	nameEnd := int(d.InputOffset())
	m := Member{Start: nameEnd - len(n)}
	if name, ok := Unquote(n); ok {
		m.Name = string(name)
	}
	var vStart int
	if descend != nil && d.PeekKind() == '{' && descend(m.Name) {
		if m.Sub, vStart, m.End, err = readObject(d, data, nil); err != nil {
			return Member{}, err
		}
	} else {
		v, err := d.ReadValue()
		if err != nil {
			return Member{}, err
		}
		m.End = int(d.InputOffset())
		vStart = m.End - len(v)
	}
	m.Key, m.Value = data[m.Start:vStart], data[vStart:m.End]
	return m, nil
}

// Find returns the member called name, or nil.
func Find(ms []Member, name string) *Member {
	for i := range ms {
		if ms[i].Name == name {
			return &ms[i]
		}
	}
	return nil
}

// AppendObject appends an object of ms in their order, each member's value
// replaced by what value returns for it (nil: the value as written; drop:
// the member is left out). value may be nil.
func AppendObject(dst []byte, ms []Member, value func(m *Member) (v []byte, drop bool)) []byte {
	dst = append(dst, '{')
	first := true
	for i := range ms {
		m := &ms[i]
		var v []byte
		if value != nil {
			var drop bool
			if v, drop = value(m); drop {
				continue
			}
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if v == nil {
			v = m.Value
		}
		dst = append(append(dst, m.Key...), v...)
	}
	return append(dst, '}')
}

// String returns the content of the string member called name of ms, or
// "" when there is none or it is no string.
func String(ms []Member, name string) string {
	if m := Find(ms, name); m != nil {
		if s, ok := Unquote(m.Value); ok {
			return string(s)
		}
	}
	return ""
}

// Unquote returns the content of a JSON string as written, or false. A
// string with nothing to unescape is not copied.
func Unquote(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	if bytes.IndexByte(v[1:len(v)-1], '\\') < 0 {
		return v[1 : len(v)-1], true
	}
	s, err := jsontext.AppendUnquote(nil, v)
	return s, err == nil
}

// appendQuote appends s as a JSON string (invalid UTF-8 replaced by
// U+FFFD; no HTML escaping).
func appendQuote(dst []byte, s string) []byte {
	dst, _ = jsontext.AppendQuote(dst, s)
	return dst
}
