package mcpjson

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzRefs: Refs never panics; when it reads a result, that result is
// valid JSON, and each ref's span in it is a block that ParseRef reads as
// the same ref.
func FuzzRefs(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"x"},{"type":"ref/stream","streamTag":7,"mimeType":"text/plain","_meta":{"a":1}}]}`))
	f.Add([]byte(`{"z":1,"content":[{"mimeType":"m","type":"ref\/stream","streamTag":8}, 5, []],"content":[]}`))
	f.Add(AppendRef([]byte(`{"content":[`), Ref{StreamTag: 3, Meta: json.RawMessage(`{}`)}))
	f.Fuzz(func(t *testing.T, result []byte) {
		refs, err := Refs(result)
		if err != nil {
			return
		}
		if !json.Valid(result) {
			t.Fatalf("Refs read invalid JSON %q", result)
		}
		for _, r := range refs {
			back, ok := ParseRef(result[r.Start:r.End])
			if !ok || back.StreamTag != r.StreamTag || back.MimeType != r.MimeType || !bytes.Equal(back.Meta, r.Meta) {
				t.Fatalf("span %q of %q reads as %+v (%v), not %+v", result[r.Start:r.End], result, back, ok, r)
			}
		}
	})
}

// FuzzEditMeta: EditMeta never panics; what it writes is valid JSON whose
// _meta holds the member set, and whose other members keep their order.
func FuzzEditMeta(f *testing.F) {
	f.Add([]byte(`{"name":"x","_meta":{"zz":1,"progressToken":"p"},"arguments":{"b":1}}`), "progressToken", []byte(`7`))
	f.Add([]byte(``), "a", []byte(`{"x":[1]}`))
	f.Add([]byte(`{"_meta":{}}`), "io.modelcontextprotocol/protocolVersion", []byte(`"2026-07-28"`))
	f.Fuzz(func(t *testing.T, params []byte, name string, value []byte) {
		if !jsontext.Value(value).IsValid() || !utf8.ValidString(name) {
			return // values must be valid JSON (RFC 8259: UTF-8); names are written as JSON strings
		}
		value = bytes.TrimSpace(value)
		out, err := EditMeta(params, Set(name, value))
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("EditMeta(%q, %q: %q) = invalid %q", params, name, value, out)
		}
		if got := MetaValue(out, name); !bytes.Equal(got, value) {
			t.Fatalf("EditMeta(%q, %q: %q) = %q, whose member is %q", params, name, value, out, got)
		}
		before, _ := ReadObject(params, nil)
		after, err := ReadObject(out, nil)
		if err != nil {
			t.Fatalf("%q does not read: %v", out, err)
		}
		var names []string
		for _, m := range after {
			names = append(names, m.Name)
		}
		i := 0
		for _, m := range before {
			for i < len(names) && names[i] != m.Name {
				i++
			}
			if i == len(names) {
				t.Fatalf("member %q of %q lost or moved in %q", m.Name, params, out)
			}
		}
	})
}
