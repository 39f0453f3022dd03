package mcpjson

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/protocol"
)

// TestRefs: the ref/stream blocks of a result's top-level content array,
// each with its span; a type written with escapes counts, blocks of other
// types (with "ref/stream" in their text), a ref nested elsewhere and a
// ref with no 32-bit tag do not.
func TestRefs(t *testing.T) {
	in := `{"z" : 1,"content":[{"type":"text","text":"ref/stream \"x\""},` +
		` {"type":"ref/stream","streamTag":7,"mimeType":"text/plain"} , {"b":2,"a":1}, 5,` +
		`{"mimeType":"image/p\u006eg","_meta":{"io.mcp-flow/original":{"block":{"type":"image"},"field":"data"}},"streamTag":8,"type":"ref\/stream"},` +
		`{"type":"ref/stream","streamTag":4294967296},{"type":"ref/stream","streamTag":-1},{"type":"ref/stream"}],` +
		`"a":{"content":[{"type":"ref/stream","streamTag":9}]},"isError":false}`
	refs, err := Refs([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		tag               uint32
		mime, meta, block string
	}{
		{7, "text/plain", "", `{"type":"ref/stream","streamTag":7,"mimeType":"text/plain"}`},
		{8, "image/png", `{"io.mcp-flow/original":{"block":{"type":"image"},"field":"data"}}`,
			`{"mimeType":"image/p\u006eg","_meta":{"io.mcp-flow/original":{"block":{"type":"image"},"field":"data"}},"streamTag":8,"type":"ref\/stream"}`},
	}
	if len(refs) != len(want) {
		t.Fatalf("%d refs, want %d: %+v", len(refs), len(want), refs)
	}
	for i, w := range want {
		r := refs[i]
		if r.Type != "ref/stream" || r.StreamTag != w.tag || r.MimeType != w.mime || string(r.Meta) != w.meta || in[r.Start:r.End] != w.block {
			t.Errorf("ref %d = %+v (block %s), want %+v", i, r, in[r.Start:r.End], w)
		}
	}
	for text, want := range map[string]bool{
		in: true, `{"content":[{"type":"ref\/stream"}]}`: true, `{"content":[]}`: false, `ref/stream`: true,
		`{"uri":"a/stream","t":"re/stream ref/strea"}`: false, `/stream/stream"ref\/stream"`: true, `/stream`: false, `ref\\/stream`: false,
	} {
		if got := MentionsRef([]byte(text)); got != want || got != (strings.Contains(text, protocol.ContentTypeRef) || strings.Contains(text, `ref\/stream`)) {
			t.Errorf("MentionsRef(%s) = %v, want %v", text, got, want)
		}
	}
	for _, in := range []string{`{}`, `{"content":"x"}`, `{"content":{"type":"ref/stream","streamTag":1}}`, `[{"type":"ref/stream","streamTag":1}]`, `"ref/stream"`, `null`} {
		if refs, err := Refs([]byte(in)); err != nil || refs != nil {
			t.Errorf("%s: %+v, %v", in, refs, err)
		}
	}
	for i := range len(in) {
		if refs, err := Refs([]byte(in[:i])); err == nil {
			t.Fatalf("prefix %q: no error (%+v)", in[:i], refs)
		}
	}
	for _, bad := range []string{`{"content":[{"type":"ref/stream","streamTag":1}]}x`, `{"content":[{"type":"ref/stream","streamTag":1,}]}`, `{"content":[1 2]}`} {
		if _, err := Refs([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestReadContent: every block with its span, objects with their members
// (descended as asked), other values without.
func TestReadContent(t *testing.T) {
	in := `{"content":[ {"type":"resource","resource":{"uri":"u","text":"t"}} ,"s",[1]],"content2":[{}]}`
	var got []string
	err := ReadContent([]byte(in), func(n string) bool { return n == "resource" }, func(b Block) error {
		s := in[b.Start:b.End]
		if b.Members != nil {
			s += " " + String(Find(b.Members, "resource").Sub, "text")
		}
		got = append(got, s)
		return nil
	})
	want := []string{`{"type":"resource","resource":{"uri":"u","text":"t"}} t`, `"s"`, `[1]`}
	if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q (%v), want %q", got, err, want)
	}
	stop := json.Unmarshal([]byte("x"), new(int))
	if err := ReadContent([]byte(in), nil, func(Block) error { return stop }); err != stop {
		t.Errorf("visit's error: %v", err)
	}
}

// TestAppendRef: exact bytes of spec §5.2's block, as AppendRef and
// MarshalJSON write it, and back.
func TestAppendRef(t *testing.T) {
	for _, c := range []struct {
		r    Ref
		want string
	}{
		{Ref{Type: "ref/stream", StreamTag: 1, MimeType: "text/plain"}, `{"type":"ref/stream","streamTag":1,"mimeType":"text/plain"}`},
		{Ref{StreamTag: 4294967295}, `{"type":"ref/stream","streamTag":4294967295}`},
		{Ref{StreamTag: 2, MimeType: "a\"b", Meta: json.RawMessage(`{"z":1,"a":{}}`)}, `{"type":"ref/stream","streamTag":2,"mimeType":"a\"b","_meta":{"z":1,"a":{}}}`},
	} {
		if got := AppendRef([]byte("x"), c.r); string(got) != "x"+c.want {
			t.Errorf("AppendRef = %s, want %s", got, c.want)
		}
		got, err := json.Marshal(map[string]any{"content": []any{c.r}})
		if err != nil || string(got) != `{"content":[`+c.want+`]}` {
			t.Errorf("json.Marshal = %s (%v)", got, err)
		}
		var back Ref
		if err := json.Unmarshal([]byte(c.want), &back); err != nil || back.StreamTag != c.r.StreamTag || back.MimeType != c.r.MimeType ||
			string(back.Meta) != string(c.r.Meta) || back.Type != "ref/stream" || back.Start != 0 || back.End != 0 {
			t.Errorf("back: %+v, %v", back, err)
		}
	}
	var r Ref
	for _, in := range []string{`{"type":"text","text":"x"}`, `{"type":"ref/stream","streamTag":"1"}`, `{"type":"ref/stream","streamTag":1.5}`, `[]`, `{`} {
		if err := json.Unmarshal([]byte(in), &r); err == nil {
			t.Errorf("%s read as a ref: %+v", in, r)
		}
		if _, ok := ParseRef([]byte(in)); ok {
			t.Errorf("%s parsed as a ref", in)
		}
	}
}

// TestSplice: replacements in order, nested splices, the length before
// writing, and the text itself when nothing was replaced.
func TestSplice(t *testing.T) {
	src := []byte(`{"content":[{"type":"ref/stream","streamTag":7},{"k":1}],"z":0}`)
	inner := NewSplice([]byte(`{"type":"text","text":}`))
	inner.Replace(22, 22, []byte(`"seven"`))
	s := NewSplice(src)
	ref := `{"type":"ref/stream","streamTag":7}`
	start := strings.Index(string(src), ref)
	s.ReplaceSplice(start, start+len(ref), inner)
	s.Replace(len(src)-1, len(src)-1, []byte(`,"resultType":"complete"`))
	want := `{"content":[{"type":"text","text":"seven"},{"k":1}],"z":0,"resultType":"complete"}`
	if got := s.Bytes(); string(got) != want || s.Len() != len(want) || cap(got) != len(want) || !s.Changed() {
		t.Errorf("got %s (len %d, cap %d), want %s", got, s.Len(), cap(got), want)
	}
	if got := s.AppendTo([]byte("<")); string(got) != "<"+want {
		t.Errorf("AppendTo: %s", got)
	}
	plain := NewSplice(src)
	if got := plain.Bytes(); &got[0] != &src[0] || plain.Changed() || plain.Len() != len(src) {
		t.Error("a splice with nothing replaced is not its text")
	}
	for _, bad := range []func(){
		func() { s.Replace(10, 11, nil) },            // before the last one
		func() { NewSplice(src).Replace(5, 4, nil) }, // backwards
		func() { NewSplice(src).Replace(0, len(src)+1, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			bad()
		}()
	}
}
