package workload

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"testing"
)

// TestParseCall: key=value arguments, JSON values as JSON, N the size
// asked for, an echo Call's text replaced by the text echoed.
func TestParseCall(t *testing.T) {
	c, err := ParseCall("blob bytes=N mime=image/png streams=4 opts={\"a\":true}")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "blob", "arguments": map[string]any{"bytes": int64(1234), "mime": "image/png", "streams": float64(4), "opts": map[string]any{"a": true}}}
	if got := c.params(1234, ""); !reflect.DeepEqual(got, want) {
		t.Errorf("params: %#v, want %#v", got, want)
	}
	e, _ := ParseCall("echo text=hello")
	if got := e.params(0, "hi")["arguments"].(map[string]any)["text"]; got != "hi" {
		t.Errorf("echo text %v, want hi", got)
	}
	for _, bad := range []string{"", "tool novalue", "tool =x"} {
		if _, err := ParseCall(bad); err == nil {
			t.Errorf("ParseCall(%q) took it", bad)
		}
	}
}

// TestInlineBytes: a result's payload is its text, plus its image, audio
// and resource blobs decoded (padding and all); isError is an error.
func TestInlineBytes(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 1000} {
		data := base64.StdEncoding.EncodeToString(make([]byte, n))
		raw, _ := json.Marshal(map[string]any{"content": []any{
			map[string]any{"type": "image", "data": data},
			map[string]any{"type": "text", "text": "abc"},
			map[string]any{"type": "resource", "resource": map[string]any{"blob": data}},
		}})
		if got, err := inlineBytes(raw); err != nil || got != int64(2*n+3) {
			t.Errorf("%d bytes twice and 3 of text: counted %d, %v", n, got, err)
		}
	}
	if _, err := inlineBytes(json.RawMessage(`{"content":[{"type":"text","text":"no"}],"isError":true}`)); err == nil {
		t.Error("an isError result counted")
	}
}
