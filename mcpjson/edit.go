package mcpjson

import (
	"bytes"
	"errors"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// Edit is one change to the members of a JSON object (EditObject,
// EditMeta). Make one with Set, Add or Delete.
type Edit struct {
	// Name is the member's name; it is written as a JSON string, with
	// invalid UTF-8 replaced by U+FFFD.
	Name string
	// Value is the new value's JSON text; nil deletes the member.
	Value []byte
	// Keep leaves a member that is there already as it is: Value is only
	// added when the member is missing.
	Keep bool
}

// Set sets member name to value: in its place when it is there, last when
// it is not.
func Set(name string, value []byte) Edit { return Edit{Name: name, Value: value} }

// Add adds member name with value, last, when it is missing; a member that
// is there keeps its value.
func Add(name string, value []byte) Edit { return Edit{Name: name, Value: value, Keep: true} }

// Delete deletes member name, when it is there.
func Delete(name string) Edit { return Edit{Name: name} }

// EditObject applies edits, in order, to obj, one JSON object: a member
// that is set keeps its place, one that is added goes last (in the order
// of the edits), one that is deleted goes, and every other byte is kept as
// written (spec §10). obj itself comes back when no edit changes it.
func EditObject(obj []byte, edits ...Edit) ([]byte, error) {
	ms, start, end, err := readWhole(obj, nil)
	if err != nil {
		return nil, err
	}
	out, _ := editMembers(obj, start, end, ms, edits)
	return out, nil
}

// EditMeta applies edits, in order, to the members of params' _meta, the
// object MCP reserves for metadata in every request's params (MCP
// 2025-11-25 "_meta"; spec §6.2 for progressToken, §11.5 and §11.6 for the
// 2026-07-28 members): members keep their order and bytes, as EditObject
// keeps them. Params without _meta get one, last, when an edit adds to
// it; a _meta that deletions leave empty is taken out. Empty or null
// params count as {}. params itself comes back when no edit changes it;
// params that are no object are an error.
func EditMeta(params []byte, edits ...Edit) ([]byte, error) {
	if keptAsTheyAre(params, edits) {
		return params, nil // a request whose client wrote its own _meta (spec §11.6)
	}
	if p := bytes.TrimSpace(params); len(p) == 0 || string(p) == "null" {
		meta, changed := editMembers([]byte("{}"), 0, 2, nil, edits)
		if !changed {
			return params, nil
		}
		return append(append([]byte(`{"_meta":`), meta...), '}'), nil
	}
	ms, start, end, err := readWhole(params, func(n string) bool { return n == metaName })
	if err != nil {
		return nil, err
	}
	m := Find(ms, metaName)
	switch {
	case m == nil || string(m.Value) == "null":
		meta, changed := editMembers([]byte("{}"), 0, 2, nil, edits)
		if !changed {
			return params, nil
		}
		out, _ := editMembers(params, start, end, ms, []Edit{Set(metaName, meta)})
		return out, nil
	case m.Sub == nil:
		return nil, errors.New("mcpjson: _meta is no object")
	}
	meta, changed := editMembers(params, m.ValueStart(), m.End, m.Sub, edits)
	if !changed {
		return params, nil
	}
	if len(m.Sub) > 0 && isEmptyObject(meta) {
		out, _ := editMembers(params, start, end, ms, []Edit{Delete(metaName)})
		return out, nil
	}
	s := NewSplice(params)
	s.Replace(m.ValueStart(), m.End, meta)
	return s.Bytes(), nil
}

// metaName is the name of MCP's metadata member.
const metaName = "_meta"

// MetaValue returns the value of params._meta[name] as written, or nil
// when params have no such member (or do not read as a JSON object).
func MetaValue(params []byte, name string) []byte {
	if len(params) == 0 || params[0] != '{' || !mayHave(params, name) {
		return nil
	}
	var found []byte
	if !scanMeta(params, func(key, value []byte) {
		if found == nil && string(key) == name {
			found = value
		}
	}) {
		return nil
	}
	return found
}

// scanMeta calls visit with each member of params' _meta (its name
// unescaped, its value as written in params) and reports whether params
// read as one JSON object. It reads as ReadObject would, without making
// member lists: every request's _meta is read on its way, often more than
// once.
func scanMeta(params []byte, visit func(key, value []byte)) bool {
	return scanObject(params, func(key []byte, d *jsontext.Decoder) error {
		if string(key) != metaName || d.PeekKind() != '{' {
			return d.SkipValue()
		}
		return visitMembers(d, params, visit)
	})
}

// scanObject reads obj, which must be one JSON object, and calls member
// with each member's unescaped name and the decoder at its value, which
// member must read; it reports whether obj read whole. A pooled decoder
// reads it: no member lists are made.
func scanObject(obj []byte, member func(key []byte, d *jsontext.Decoder) error) bool {
	p := decoders.Get().(*pooledDecoder)
	defer p.put()
	d := p.reset(obj)
	if d.PeekKind() != '{' {
		return false
	}
	if _, err := d.ReadToken(); err != nil {
		return false
	}
	for d.PeekKind() != '}' {
		k, err := d.ReadValue()
		if err != nil {
			return false
		}
		key, _ := Unquote(k)
		if member(key, d) != nil {
			return false
		}
	}
	_, err := d.ReadToken()
	return err == nil && atEnd(d) == nil
}

// visitMembers reads the object at d's position (in data) and calls visit
// with each member's name and value as written.
func visitMembers(d *jsontext.Decoder, data []byte, visit func(key, value []byte)) error {
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	for d.PeekKind() != '}' {
		k, err := d.ReadValue()
		if err != nil {
			return err
		}
		key, _ := Unquote(k)
		v, err := d.ReadValue()
		if err != nil {
			return err
		}
		end := int(d.InputOffset())
		visit(key, data[end-len(v):end])
	}
	_, err := d.ReadToken()
	return err
}

// keptAsTheyAre reports whether edits change nothing in params: each one
// adds a member that params' _meta has already (Add keeps it).
func keptAsTheyAre(params []byte, edits []Edit) bool {
	if len(edits) == 0 || len(edits) > 8 || len(params) == 0 || params[0] != '{' {
		return false
	}
	for _, e := range edits {
		if !e.Keep || !mayHave(params, e.Name) {
			return false
		}
	}
	var have [8]bool
	ok := scanMeta(params, func(key, _ []byte) {
		for i, e := range edits {
			if string(key) == e.Name {
				have[i] = true
			}
		}
	})
	for i := range edits {
		ok = ok && have[i]
	}
	return ok
}

// mayHave reports whether params may have a member called name: false only
// when they have no escape (so every name is written as it is) and do not
// hold name in quotes. It spares reading the params of the many requests
// without the member (a progressToken, say) on every request's way.
func mayHave(params []byte, name string) bool {
	return bytes.IndexByte(params, '\\') >= 0 || bytes.Contains(params, []byte(`"`+name+`"`))
}

// ProgressToken returns a request's params._meta.progressToken as written
// (MCP progress: spec §6.2), or nil when it has none.
func ProgressToken(params []byte) []byte { return MetaValue(params, protocol.MetaProgressToken) }

// WithResultType returns result with resultType "complete" added as its
// last member when it has none: every 2026-07-28 result names its type
// (spec §11.5). A result that has one (an "input_required" one keeps it),
// or that is no object, comes back as it is. result must be valid JSON, as
// a handler's marshalled result or a decoded frame is; text in which
// "resultType" cannot occur is not read, only copied once with the member
// added.
func WithResultType(result []byte) []byte {
	body := bytes.TrimRight(result, " \t\r\n")
	if len(body) < 2 || bytes.TrimLeft(body, " \t\r\n")[0] != '{' || body[len(body)-1] != '}' {
		return result
	}
	if !bytes.Contains(result, []byte("resultType")) && !bytes.Contains(result, []byte(`\u`)) {
		add := `,"resultType":"complete"}`
		if isEmptyObject(body) {
			add = add[1:]
		}
		out := make([]byte, 0, len(body)-1+len(add))
		return append(append(out, body[:len(body)-1]...), add...)
	}
	if hasMember(result, "resultType") {
		return result // the common case of a 2026-07-28 upstream's results: no member lists made
	}
	out, err := EditObject(result, Add("resultType", []byte(`"complete"`)))
	if err != nil {
		return result
	}
	return out
}

// hasMember reports whether obj reads as one JSON object with a member
// called name (its own, not a nested object's).
func hasMember(obj []byte, name string) bool {
	found := false
	return scanObject(obj, func(key []byte, d *jsontext.Decoder) error {
		found = found || string(key) == name
		return d.SkipValue()
	}) && found
}

// isEmptyObject reports whether obj, an object, has no members.
func isEmptyObject(obj []byte) bool {
	return len(bytes.TrimSpace(bytes.TrimSpace(obj)[1:])) == 1
}

// editMembers applies edits to the object data[start:end], whose members
// are ms: see EditObject. changed is false, and the object comes back as
// written, when no edit changes it. Without deletions the object is
// spliced (every byte kept); with them it is written again from its
// members (the white space between members goes).
func editMembers(data []byte, start, end int, ms []Member, edits []Edit) (out []byte, changed bool) {
	type added struct {
		name  string
		value []byte
	}
	var (
		set      = make([][]byte, len(ms)) // new values of the members that are there
		deleted  = make([]bool, len(ms))
		ndeleted int
		adds     []added
	)
	for _, e := range edits {
		if i := slices.IndexFunc(ms, func(m Member) bool { return m.Name == e.Name }); i >= 0 && !deleted[i] {
			switch {
			case e.Value == nil:
				deleted[i], set[i] = true, nil
				ndeleted++
				changed = true
			case !e.Keep && !bytes.Equal(e.Value, ms[i].Value):
				set[i] = e.Value
				changed = true
			case !e.Keep:
				set[i] = nil // set back to what it was
			}
			continue
		}
		a := slices.IndexFunc(adds, func(a added) bool { return a.name == e.Name })
		switch {
		case a >= 0 && e.Value == nil:
			adds = slices.Delete(adds, a, a+1)
		case a >= 0 && !e.Keep:
			adds[a].value = e.Value
		case a < 0 && e.Value != nil:
			adds = append(adds, added{e.Name, e.Value})
			changed = true
		}
	}
	if !changed {
		return data[start:end], false
	}
	appendAdds := func(dst []byte, comma bool) []byte {
		for _, a := range adds {
			if comma {
				dst = append(dst, ',')
			}
			comma = true
			dst = append(appendQuote(dst, a.name), ':')
			dst = append(dst, a.value...)
		}
		return dst
	}
	if ndeleted == 0 {
		s := NewSplice(data[start:end])
		for i := range ms { // in the order of their spans
			if set[i] != nil {
				s.Replace(ms[i].ValueStart()-start, ms[i].End-start, set[i])
			}
		}
		if len(adds) > 0 {
			brace := end - start - 1
			s.Replace(brace, brace, appendAdds(nil, len(ms) > 0))
		}
		return s.Bytes(), true
	}
	out = append(make([]byte, 0, end-start), '{')
	kept := 0
	for i := range ms {
		if deleted[i] {
			continue
		}
		if kept > 0 {
			out = append(out, ',')
		}
		kept++
		v := set[i]
		if v == nil {
			v = ms[i].Value
		}
		out = append(append(out, ms[i].Key...), v...)
	}
	return append(appendAdds(out, kept > 0), '}'), true
}
