package bridge

import (
	"bytes"
	"errors"

	"github.com/go-json-experiment/json/jsontext"
)

// The bridges pass messages on as JSON text. Where they change one (drop a
// member, move a payload out, put it back), they splice the text: each
// message is parsed once on its way through, and members keep their order
// and their bytes (spec §10).

// rawMember is one member of a JSON object as it is written.
type rawMember struct {
	name  string
	key   []byte      // the name as written, through the colon
	value []byte      // the value as written
	sub   []rawMember // the value's members, when it was read member by member
}

// newObjectDecoder returns a decoder over data (not copied: values read from
// it are slices of data).
func newObjectDecoder(data []byte) *jsontext.Decoder {
	return jsontext.NewDecoder(bytes.NewBuffer(data))
}

// readObject reads the object at d's position member by member; data is
// what d reads, from its start. A member whose name descend accepts and
// whose value is an object is read member by member too (its value is still
// its exact text). It returns the members and the object's span in data.
func readObject(d *jsontext.Decoder, data []byte, descend func(name string) bool) (ms []rawMember, start, end int, err error) {
	if d.PeekKind() != '{' {
		return nil, 0, 0, errors.New("not a JSON object")
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, 0, 0, err
	}
	start = int(d.InputOffset()) - 1
	ms = []rawMember{} // non-nil: an empty object read member by member has sub != nil
	for d.PeekKind() != '}' {
		n, err := d.ReadValue()
		if err != nil {
			return nil, 0, 0, err
		}
		nameEnd := int(d.InputOffset())
		nameStart := nameEnd - len(n)
		name, err := jsontext.AppendUnquote(nil, n)
		if err != nil {
			return nil, 0, 0, err
		}
		m := rawMember{name: string(name)}
		var vStart, vEnd int
		if descend != nil && descend(m.name) && d.PeekKind() == '{' {
			if m.sub, vStart, vEnd, err = readObject(d, data, nil); err != nil {
				return nil, 0, 0, err
			}
		} else {
			v, err := d.ReadValue()
			if err != nil {
				return nil, 0, 0, err
			}
			vEnd = int(d.InputOffset())
			vStart = vEnd - len(v)
		}
		m.key, m.value = data[nameStart:vStart], data[vStart:vEnd]
		ms = append(ms, m)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, 0, 0, err
	}
	return ms, start, int(d.InputOffset()), nil
}

// parseObject reads data, which must be one JSON object, member by member.
func parseObject(data []byte, descend func(name string) bool) ([]rawMember, error) {
	d := newObjectDecoder(data)
	ms, _, _, err := readObject(d, data, descend)
	if err != nil {
		return nil, err
	}
	if _, err := d.ReadToken(); err == nil {
		return nil, errors.New("data after the JSON object")
	}
	return ms, nil
}

// member returns the member called name, or nil.
func member(ms []rawMember, name string) *rawMember {
	for i := range ms {
		if ms[i].name == name {
			return &ms[i]
		}
	}
	return nil
}

// appendObject appends an object of ms in their order, with each member's
// value replaced by what value returns for it (nil: the member as written;
// a member that value reports as dropped is left out).
func appendObject(dst []byte, ms []rawMember, value func(m *rawMember) (v []byte, drop bool)) []byte {
	dst = append(dst, '{')
	first := true
	for i := range ms {
		m := &ms[i]
		v, drop := []byte(nil), false
		if value != nil {
			v, drop = value(m)
		}
		if drop {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, m.key...)
		if v == nil {
			v = m.value
		}
		dst = append(dst, v...)
	}
	return append(dst, '}')
}

// withoutMember returns obj without its member called name (obj itself when
// it has none).
func withoutMember(obj []byte, name string) ([]byte, error) {
	ms, err := parseObject(obj, nil)
	if err != nil {
		return nil, err
	}
	if member(ms, name) == nil {
		return obj, nil
	}
	return appendObject(nil, ms, func(m *rawMember) ([]byte, bool) { return nil, m.name == name }), nil
}

// unquote returns the content of a JSON string as written, or false.
func unquote(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	if bytes.IndexByte(v[1:len(v)-1], '\\') < 0 {
		return v[1 : len(v)-1], true // nothing to unescape: no copy
	}
	s, err := jsontext.AppendUnquote(nil, v)
	return s, err == nil
}
