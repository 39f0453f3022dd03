package mcpjson

import (
	"strings"
	"testing"
)

// TestReadObject: each member's name (unescaped), key and value as
// written, and span; a descended member's members too, with spans in the
// same text.
func TestReadObject(t *testing.T) {
	in := []byte(` { "a" : 1 , "b\u0022":{ "x":[1,2],"y" : "s\"t" },"c":null} `)
	ms, err := ReadObject(in, func(n string) bool { return n == `b"` })
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ name, key, value, span string }
	check := func(ms []Member, ws []want) {
		t.Helper()
		if len(ms) != len(ws) {
			t.Fatalf("%d members, want %d", len(ms), len(ws))
		}
		for i, w := range ws {
			m := ms[i]
			if m.Name != w.name || string(m.Key) != w.key || string(m.Value) != w.value || string(in[m.Start:m.End]) != w.span {
				t.Errorf("member %d = %q %q %q span %q, want %+v", i, m.Name, m.Key, m.Value, in[m.Start:m.End], w)
			}
			if m.ValueStart() != m.End-len(m.Value) || string(in[m.ValueStart():m.End]) != w.value {
				t.Errorf("member %d: value starts at %d", i, m.ValueStart())
			}
		}
	}
	check(ms, []want{
		{"a", `"a" : `, `1`, `"a" : 1`},
		{`b"`, `"b\u0022":`, `{ "x":[1,2],"y" : "s\"t" }`, `"b\u0022":{ "x":[1,2],"y" : "s\"t" }`},
		{"c", `"c":`, `null`, `"c":null`},
	})
	check(ms[1].Sub, []want{
		{"x", `"x":`, `[1,2]`, `"x":[1,2]`},
		{"y", `"y" : `, `"s\"t"`, `"y" : "s\"t"`},
	})
	if ms[0].Sub != nil || ms[2].Sub != nil {
		t.Error("members not descended into have Sub")
	}
	if ms, err := ReadObject([]byte(`{"e":{}}`), func(string) bool { return true }); err != nil || ms[0].Sub == nil || len(ms[0].Sub) != 0 {
		t.Errorf("an empty object read member by member: %+v, %v", ms, err)
	}
	if String(ms, "c") != "" || String(ms, "none") != "" {
		t.Error("String of a member that is no string")
	}
	if s := String(ms[1].Sub, "y"); s != `s"t` {
		t.Errorf("String = %q", s)
	}
}

// TestReadObjectErrors: malformed text, text that is no object and text
// after the object are errors, as is every prefix of a valid object.
func TestReadObjectErrors(t *testing.T) {
	for _, in := range []string{
		``, ` `, `[1]`, `"s"`, `null`, `{"a":}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1}x`, `{"a":1} {}`,
		`{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `{"a":"\x"}`, `{"a":[1,2}`, `{"a":tru}`,
	} {
		if _, err := ReadObject([]byte(in), nil); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	valid := `{"a":[1,{"b":"c\n"}],"d":{"e":null}}`
	for i := range len(valid) {
		if _, err := ReadObject([]byte(valid[:i]), func(string) bool { return true }); err == nil {
			t.Errorf("prefix %q: no error", valid[:i])
		}
	}
}

// TestAppendObject: members in their order, values replaced or dropped.
func TestAppendObject(t *testing.T) {
	ms, err := ReadObject([]byte(`{"z": 1, "a" :[2], "m":"x"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := AppendObject([]byte("prefix"), ms, func(m *Member) ([]byte, bool) {
		switch m.Name {
		case "a":
			return []byte("null"), false
		case "m":
			return nil, true
		}
		return nil, false
	})
	if want := `prefix{"z": 1,"a" :null}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got := AppendObject(nil, ms, nil); string(got) != `{"z": 1,"a" :[2],"m":"x"}` {
		t.Errorf("as written: %s", got)
	}
}

// TestUnquote: strings without escapes are not copied; escapes are
// undone; anything else is refused.
func TestUnquote(t *testing.T) {
	in := []byte(`"plain"`)
	if s, ok := Unquote(in); !ok || string(s) != "plain" || &s[0] != &in[1] {
		t.Errorf("plain: %q %v (copied?)", s, ok)
	}
	if s, ok := Unquote([]byte(`"a\"b\u00e9\n\/"`)); !ok || string(s) != "a\"bé\n/" {
		t.Errorf("escaped: %q %v", s, ok)
	}
	for _, in := range []string{``, `"`, `x`, `1`, `"a`, `"\q"`, `null`} {
		if _, ok := Unquote([]byte(in)); ok {
			t.Errorf("%q unquoted", in)
		}
	}
}

func TestAppendQuote(t *testing.T) {
	if got := string(appendQuote(nil, "a\"<\x01\xffé")); got != `"a\"<\u0001`+"\ufffd"+`é"` {
		t.Errorf("got %s", got)
	}
	if !strings.HasPrefix(string(appendQuote([]byte("x"), "y")), "x") {
		t.Error("appendQuote does not append")
	}
}
