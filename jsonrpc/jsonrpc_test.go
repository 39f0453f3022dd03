package jsonrpc

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestParseID(t *testing.T) {
	for _, tc := range []struct {
		in, raw string
		str     bool
	}{
		{`1`, `1`, false},
		{`"1"`, `"1"`, true},
		{`0`, `0`, false},
		{`-7`, `-7`, false},
		{`9007199254740993`, `9007199254740993`, false}, // 2^53+1 stays exact
		{`123456789012345678901234567890`, `123456789012345678901234567890`, false},
		{`"\u0031"`, `"1"`, true}, // canonical form
		{`"日本"`, `"日本"`, true},
		{`null`, `null`, false},
	} {
		id, err := ParseID([]byte(tc.in))
		if err != nil || id.Raw() != tc.raw || id.IsString() != tc.str {
			t.Errorf("ParseID(%s) = %q (string %v), %v; want %q", tc.in, id.Raw(), id.IsString(), err, tc.raw)
		}
	}
	for _, bad := range []string{`1.0`, `1e3`, `-0`, `01`, `true`, `{}`, `[]`, `"unterminated`, ``} {
		_, err := ParseID([]byte(bad))
		if !errors.Is(err, NewError(CodeInvalidRequest, "")) {
			t.Errorf("ParseID(%s) = %v, want -32600", bad, err)
		}
	}
	if Int64ID(1) == StringID("1") {
		t.Fatal(`1 and "1" must differ`)
	}
	if n, ok := Uint32ID(0xFFFFFFFF).Uint32(); !ok || n != 0xFFFFFFFF {
		t.Fatal("Uint32 round trip")
	}
	if _, ok := Int64ID(1 << 32).Uint32(); ok {
		t.Fatal("2^32 must not fit a 32-bit id")
	}
	if _, ok := Int64ID(-1).Uint32(); ok {
		t.Fatal("-1 must not fit a 32-bit id")
	}
}

func env(t *testing.T, s string) Envelope {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return Envelope{NotObject: true}
	}
	return Envelope{JSONRPC: m["jsonrpc"], ID: m["id"], Method: m["method"], Params: m["params"], Result: m["result"], Error: m["error"]}
}

func TestValidateOne(t *testing.T) {
	valid := map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:                                        `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`:                          `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}`:          `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"m","params":[1,2]}`:                            `{"jsonrpc":"2.0","id":2,"method":"m","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":3,"result":{"x":1}}`:                                       `{"jsonrpc":"2.0","id":3,"result":{"x":1}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`:     `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32800,"message":"c","data":{"k":[1]}}}`: `{"jsonrpc":"2.0","id":4,"error":{"code":-32800,"message":"c","data":{"k":[1]}}}`,
	}
	for in, want := range valid {
		e := env(t, in)
		m, reply := ValidateOne(&e)
		if m == nil || reply != nil {
			t.Errorf("ValidateOne(%s) = %v, %v", in, m, reply)
			continue
		}
		if got := string(AppendJSON(nil, m)); got != want {
			t.Errorf("re-encoded %s\n got %s", in, got)
		}
	}
	invalid := map[string]string{ // input: the id the -32600 reply carries
		`{"id":1,"method":"ping"}`:                           `1`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`:           `1`,
		`{"jsonrpc":"2.0","id":1,"method":5}`:                `1`,
		`{"jsonrpc":"2.0","id":"x","method":"m","params":3}`: `"x"`,
		`{"jsonrpc":"2.0","id":1.5,"method":"m"}`:            `null`,
		`{"jsonrpc":"2.0","id":null,"method":"m"}`:           `null`,
		`{"jsonrpc":"2.0","id":7,"method":"m","result":{}}`:  `7`,
		`[1]`: `null`,
	}
	for in, id := range invalid {
		e := env(t, in)
		m, reply := ValidateOne(&e)
		if m != nil || reply == nil || reply.Error.Code != CodeInvalidRequest || reply.ID.Raw() != id {
			t.Errorf("ValidateOne(%s) = %v, %+v; want -32600 with id %s", in, m, reply, id)
		}
	}
	// Invalid responses are dropped: JSON-RPC never answers a response.
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"y"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"message":"y"}}`,
	} {
		e := env(t, in)
		if m, reply := ValidateOne(&e); m != nil || reply != nil {
			t.Errorf("ValidateOne(%s) = %v, %v; want nothing", in, m, reply)
		}
	}
}

func TestValidateBatch(t *testing.T) {
	// Empty batch: exactly one -32600 with a null id.
	msgs, replies := Validate(Payload{Batch: true})
	if len(msgs) != 0 || len(replies) != 1 || replies[0].Error.Code != CodeInvalidRequest || !replies[0].ID.IsNull() {
		t.Fatalf("empty batch: %v, %+v", msgs, replies)
	}
	// All notifications: no reply.
	n := env(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`)
	msgs, replies = Validate(Payload{Batch: true, Elems: []Envelope{n, n}})
	if len(msgs) != 2 || len(replies) != 0 {
		t.Fatalf("notification batch: %d messages, %d replies", len(msgs), len(replies))
	}
	// An invalid response is dropped: no message, no reply.
	msgs, replies = Validate(Payload{Elems: []Envelope{env(t, `{"jsonrpc":"2.0"}`)}})
	if len(msgs) != 0 || len(replies) != 0 {
		t.Fatalf("invalid response: %v, %v", msgs, replies)
	}
	// Mixed: replies only for the invalid elements; valid ones still delivered.
	r := env(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	bad := env(t, `{"jsonrpc":"2.0","id":2,"method":1}`)
	msgs, replies = Validate(Payload{Batch: true, Elems: []Envelope{r, {NotObject: true}, n, bad}})
	if len(msgs) != 2 || len(replies) != 2 || replies[0].ID.Raw() != "null" || replies[1].ID.Raw() != "2" {
		t.Fatalf("mixed batch: %d messages, %+v", len(msgs), replies)
	}
}

func TestErrorIsByCode(t *testing.T) {
	err := error(&Error{Code: CodeRequestCancelled, Message: "user pressed Escape"})
	if !errors.Is(err, NewError(CodeRequestCancelled, "")) || errors.Is(err, NewError(CodeStreamLimitExceeded, "")) {
		t.Fatal("errors.Is must compare codes")
	}
	if got := err.Error(); got != "jsonrpc: user pressed Escape (-32800)" {
		t.Fatalf("Error() = %q", got)
	}
	if CodeStreamInjection != CodeResourceNotFound {
		t.Fatal("the documented -32002 clash changed")
	}
	if CodeRequestCancelled == CodeStreamLimitExceeded {
		t.Fatal("cancellation must be told apart from the stream limit")
	}
}

func TestAppendJSONEscapes(t *testing.T) {
	m := &Request{ID: StringID("a\"b"), Method: "x\n\u0001日本"}
	if got, want := string(AppendJSON(nil, m)), `{"jsonrpc":"2.0","id":"a\"b","method":"x\n\u0001日本"}`; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var back struct{ ID, Method string }
	if err := json.Unmarshal(AppendJSON(nil, m), &back); err != nil || back.Method != m.Method || back.ID != "a\"b" {
		t.Fatalf("does not round trip: %v %+v", err, back)
	}
	resp := NewErrorResponse(ID{}, NewError(CodeParseError, "bad"))
	if got := string(AppendJSON(nil, resp)); got != `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}` {
		t.Fatalf("got %s", got)
	}
}
