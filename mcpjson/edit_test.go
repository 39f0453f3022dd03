package mcpjson

import (
	"encoding/json"
	"testing"
)

// TestEditObject: a member set keeps its place and the bytes around it,
// one added goes last in the order of the edits, one deleted goes; obj
// itself comes back when nothing changes.
func TestEditObject(t *testing.T) {
	for _, c := range []struct {
		name, in string
		edits    []Edit
		want     string
	}{
		{"set in place", `{ "z":1 , "a" : [2],"m":"x" }`, []Edit{Set("a", []byte(`{"k":"v"}`))}, `{ "z":1 , "a" : {"k":"v"},"m":"x" }`},
		{"add last", `{"z":1,"a":2}`, []Edit{Add("q", []byte(`"é\""`)), Add("b", []byte(`0`))}, `{"z":1,"a":2,"q":"é\"","b":0}`},
		{"add to empty", `{}`, []Edit{Add("x", []byte(`1`))}, `{"x":1}`},
		{"add to empty with space", `{ }`, []Edit{Set("x", []byte(`1`))}, `{ "x":1}`},
		{"add keeps", `{"resultType":"input_required","a":1}`, []Edit{Add("resultType", []byte(`"complete"`))}, `{"resultType":"input_required","a":1}`},
		{"name needing escapes", `{"a":1}`, []Edit{Set("q\"\n", []byte(`2`))}, `{"a":1,"q\"\n":2}`},
		{"escaped name found", `{"a\u0062":1}`, []Edit{Set("ab", []byte(`2`))}, `{"a\u0062":2}`},
		{"delete", `{"z":1, "transport":{"type":"mcp-flow"},"a":{"b":1}}`, []Edit{Delete("transport")}, `{"z":1,"a":{"b":1}}`},
		{"delete first and last", `{"f":0,"m":1,"l":2}`, []Edit{Delete("f"), Delete("l")}, `{"m":1}`},
		{"delete all, then add", `{"f":0}`, []Edit{Delete("f"), Add("n", []byte(`1`))}, `{"n":1}`},
		{"delete and set", `{"a":1,"b":2,"c":3}`, []Edit{Delete("b"), Set("c", []byte(`4`)), Set("d", []byte(`5`))}, `{"a":1,"c":4,"d":5}`},
		{"delete then set again goes last", `{"a":1,"b":2}`, []Edit{Delete("a"), Set("a", []byte(`9`))}, `{"b":2,"a":9}`},
		{"added then deleted", `{"a":1}`, []Edit{Add("n", []byte(`1`)), Delete("n")}, `{"a":1}`},
		{"added then set", `{"a":1}`, []Edit{Add("n", []byte(`1`)), Set("n", []byte(`2`))}, `{"a":1,"n":2}`},
	} {
		got, err := EditObject([]byte(c.in), c.edits...)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: got %s (%v), want %s", c.name, got, err, c.want)
		}
	}
	for _, c := range []struct {
		in    string
		edits []Edit
	}{
		{`{"a":1}`, nil},
		{`{"a":1}`, []Edit{Delete("b")}},
		{`{"a":1}`, []Edit{Set("a", []byte(`1`))}},
		{`{"a":1}`, []Edit{Add("a", []byte(`2`))}},
	} {
		in := []byte(c.in)
		if got, err := EditObject(in, c.edits...); err != nil || &got[0] != &in[0] || len(got) != len(in) {
			t.Errorf("%s %+v: changed or copied: %s, %v", c.in, c.edits, got, err)
		}
	}
	for _, in := range []string{``, `[]`, `{"a":1`, `{"a":1}}`} {
		if _, err := EditObject([]byte(in), Set("x", []byte("1"))); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// TestEditMeta: params' _meta is edited in place, nested values and the
// order of every other member kept; params get a _meta, last, when an
// edit adds one; a _meta deletions empty goes; unchanged params are the
// same slice.
func TestEditMeta(t *testing.T) {
	progress := Set("progressToken", []byte(`7`))
	modern := []Edit{Add("io.modelcontextprotocol/protocolVersion", []byte(`"2026-07-28"`)), Add("io.modelcontextprotocol/clientCapabilities", []byte(`{}`))}
	for _, c := range []struct {
		name, in string
		edits    []Edit
		want     string
	}{
		{"no params", ``, []Edit{progress}, `{"_meta":{"progressToken":7}}`},
		{"null params", `null`, []Edit{progress}, `{"_meta":{"progressToken":7}}`},
		{"no _meta", `{"name":"x","arguments":{"b":1,"a":2}}`, []Edit{progress}, `{"name":"x","arguments":{"b":1,"a":2},"_meta":{"progressToken":7}}`},
		{"null _meta", `{"_meta":null,"name":"x"}`, []Edit{progress}, `{"_meta":{"progressToken":7},"name":"x"}`},
		{"token replaced in place", `{"_meta":{"z":{"y":1,"b":[2,1]},"progressToken":"host","a":0},"name":"x"}`, []Edit{progress},
			`{"_meta":{"z":{"y":1,"b":[2,1]},"progressToken":7,"a":0},"name":"x"}`},
		{"members added last", `{"name":"x","_meta":{"zz":1,"aa":{"b":1,"a":2}},"arguments":{}}`, append([]Edit{progress}, modern...),
			`{"name":"x","_meta":{"zz":1,"aa":{"b":1,"a":2},"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"arguments":{}}`},
		{"deleted", `{"name":"x","_meta":{"zz":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","aa":2},"arguments":{"z":1}}`,
			[]Edit{Delete("io.modelcontextprotocol/protocolVersion"), Delete("io.modelcontextprotocol/clientCapabilities")},
			`{"name":"x","_meta":{"zz":1,"aa":2},"arguments":{"z":1}}`},
		{"emptied _meta goes", `{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"arguments":{"z":1}}`,
			[]Edit{Delete("io.modelcontextprotocol/protocolVersion")}, `{"name":"x","arguments":{"z":1}}`},
	} {
		got, err := EditMeta([]byte(c.in), c.edits...)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: got %s (%v)\nwant %s", c.name, got, err, c.want)
		}
	}
	p := []byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025","io.modelcontextprotocol/clientCapabilities":{"a":1}}}`)
	if got, err := EditMeta(p, append(modern, Delete("absent"))...); err != nil || &got[0] != &p[0] || len(got) != len(p) {
		t.Errorf("members the params have win: changed or copied: %s, %v", got, err)
	}
	for _, in := range []string{`{"name":"x"}`, `{"_meta":{}}`} {
		p := []byte(in)
		if got, err := EditMeta(p, Delete("absent")); err != nil || &got[0] != &p[0] {
			t.Errorf("%s: changed or copied by a delete of nothing: %s, %v", in, got, err)
		}
	}
	for _, in := range []string{`[1,2]`, `"s"`, `{"_meta":[1]}`, `{"_meta":"x"}`, `{"a":`} {
		if got, err := EditMeta([]byte(in), progress); err == nil {
			t.Errorf("%s: no error (%s)", in, got)
		}
	}
}

// TestMetaValue: params._meta members as written, names unescaped;
// nothing for params without one.
func TestMetaValue(t *testing.T) {
	p := []byte(`{"progressToken":"top","_meta":{"a":{"progressToken":"nested"},"progress\u0054oken":"tok\u00e9n","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`)
	if got := ProgressToken(p); string(got) != `"tok\u00e9n"` {
		t.Errorf("progressToken = %s", got)
	}
	if got := MetaValue(p, "io.modelcontextprotocol/protocolVersion"); string(got) != `"2026-07-28"` {
		t.Errorf("protocolVersion = %s", got)
	}
	if got := ProgressToken([]byte(`{"_meta":{"progress\u0054oken":7}}`)); string(got) != `7` {
		t.Errorf("a name written only with an escape: token %s", got) // no quick answer from its bytes
	}
	if got := ProgressToken([]byte(`{"_meta":{"progressToken":12345678901234567890}}`)); string(got) != `12345678901234567890` {
		t.Errorf("a large integer token = %s", got)
	}
	for _, in := range []string{``, `[]`, `{}`, `{"_meta":null}`, `{"_meta":{"a":1}}`, `{"_meta":{"progressToken":1}`, `{"progressToken":1}`,
		`{"text":"progressToken"}`, `{"_meta":{"progressToken":1}} x`, `{"_meta":{"progressToken":1},"_meta":{}}`, `{"_meta":{"progressToken":1,"progressToken":2}}`, `{"_meta":[{"progressToken":1}]}`} {
		if got := ProgressToken([]byte(in)); got != nil {
			t.Errorf("%s: token %s", in, got)
		}
	}
}

// TestWithResultType: "complete" goes last into a result without a
// resultType, every other byte kept; a result with one, or no object,
// comes back as it is.
func TestWithResultType(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"zeta":1,"content":[],"_meta":{"b":1,"a":2}}`, `{"zeta":1,"content":[],"_meta":{"b":1,"a":2},"resultType":"complete"}`},
		{`{}`, `{"resultType":"complete"}`},
		{` { } `, ` { "resultType":"complete"}`},
		{"{\"a\":1}\n", `{"a":1,"resultType":"complete"}`},
		{`{"text":"a resultType in a string"}`, `{"text":"a resultType in a string","resultType":"complete"}`},
		{`{"text":"\u00e9"}`, `{"text":"\u00e9","resultType":"complete"}`},
		{`{"a":{"resultType":"x"}}`, `{"a":{"resultType":"x"},"resultType":"complete"}`},
		{`{"resultType":"input_required","inputRequests":{}}`, `{"resultType":"input_required","inputRequests":{}}`},
		{`{"result\u0054ype":"input_required"}`, `{"result\u0054ype":"input_required"}`},
		{`[1]`, `[1]`},
		{`"s"`, `"s"`},
		{``, ``},
	} {
		got := WithResultType([]byte(c.in))
		if string(got) != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
		if json.Valid([]byte(c.in)) && !json.Valid(got) {
			t.Errorf("%s: invalid %s", c.in, got)
		}
	}
	in := []byte(`{"resultType":"complete"}`)
	if got := WithResultType(in); &got[0] != &in[0] {
		t.Error("a result with a resultType was copied")
	}
}

// TestEditMetaKeptAsTheyAre: Add edits of members the _meta has already
// give the params back as they are (the same bytes, not a copy); one that
// is missing is added; a _meta that is no object is still an error.
func TestEditMetaKeptAsTheyAre(t *testing.T) {
	p := []byte(`{"x":3,"_meta":{"a":1,"b":{"c":2}}}`)
	out, err := EditMeta(p, Add("a", []byte("9")), Add("b", []byte("9")))
	if err != nil || &out[0] != &p[0] || string(out) != string(p) {
		t.Fatalf("all present: %s %v, want the params themselves", out, err)
	}
	if out, err := EditMeta(p, Add("a", []byte("9")), Add("c", []byte("3"))); err != nil || string(out) != `{"x":3,"_meta":{"a":1,"b":{"c":2},"c":3}}` {
		t.Fatalf("one missing (c is only nested): %s %v", out, err)
	}
	if out, err := EditMeta([]byte(`{"_meta":{"a":1},"_meta":{"b":2}}`), Add("a", []byte("9")), Add("b", []byte("9"))); err == nil {
		t.Fatalf("duplicate _meta: %s, want an error", out)
	}
	if out, err := EditMeta([]byte(`{"_meta":[{"a":1}]}`), Add("a", []byte("9"))); err == nil {
		t.Fatalf("_meta an array: %s, want an error", out)
	}
}
