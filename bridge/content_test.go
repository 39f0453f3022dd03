package bridge

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// TestSpliceContent: only the ref/stream blocks of the content array
// change; every other byte of the result, spacing and member order
// included, is kept as it came, and a result without refs is the same
// slice.
func TestSpliceContent(t *testing.T) {
	in := []byte(`{"z" : 1,"content":[{"type":"text","text":"ref/stream \"x\""},` +
		`{"type":"ref/stream","streamTag":7,"mimeType":"text/plain"} , {"b":2,"a":1}],"a":{"content":[{"type":"ref/stream","streamTag":8}]},"isError":false}`)
	var tags []uint32
	out, err := spliceContent(in, func(block []byte) ([]byte, bool, error) {
		ref, ok := parseRef(block)
		if !ok {
			return nil, false, nil
		}
		tags = append(tags, ref.StreamTag)
		return []byte(`{"type":"text","text":"seven"}`), true, nil
	})
	want := `{"z" : 1,"content":[{"type":"text","text":"ref/stream \"x\""},` +
		`{"type":"text","text":"seven"} , {"b":2,"a":1}],"a":{"content":[{"type":"ref/stream","streamTag":8}]},"isError":false}`
	if err != nil || string(out) != want || len(tags) != 1 || tags[0] != 7 {
		t.Fatalf("spliced %s (tags %v, %v)\nwant     %s", out, tags, err, want)
	}
	none := []byte(`{"content":[{"type":"text","text":"a"}],"b":1}`)
	out, err = spliceContent(none, func([]byte) ([]byte, bool, error) { return nil, false, nil })
	if err != nil || &out[0] != &none[0] || len(out) != len(none) {
		t.Fatalf("a result with nothing replaced was copied or changed: %s, %v", out, err)
	}
	if _, err := spliceContent([]byte(`{"content":[{"type":`), func([]byte) ([]byte, bool, error) { return nil, false, nil }); err == nil {
		t.Fatal("a truncated result was accepted")
	}
}

// TestRestorePayload: the payload an upstream bridge moved to a stream goes
// back into the block it recorded, at its field, as a string (text) or
// base64 (data, blob); the block's other members keep their bytes and
// order.
func TestRestorePayload(t *testing.T) {
	payload := []byte("<a & b>\x00é")
	b64 := base64.StdEncoding.EncodeToString(payload)
	for _, c := range []struct{ block, field, want string }{
		{`{"type":"text","annotations":{"z":1,"a":2}}`, "text", `{"type":"text","annotations":{"z":1,"a":2},"text":"<a & b>\u0000é"}`},
		{`{"type":"image","mimeType":"image/png"}`, "data", `{"type":"image","mimeType":"image/png","data":"` + b64 + `"}`},
		{`{"type":"resource","resource":{"uri":"u","mimeType":"m"},"_meta":{"k":1}}`, "resource.blob", `{"type":"resource","resource":{"uri":"u","mimeType":"m","blob":"` + b64 + `"},"_meta":{"k":1}}`},
		{`{"type":"resource","resource":{}}`, "resource.text", `{"type":"resource","resource":{"text":"<a & b>\u0000é"}}`},
	} {
		got, err := restore([]byte(c.block), c.field, payload)
		if err != nil || !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("%s at %s:\n got  %s (%v)\n want %s", c.block, c.field, got, err, c.want)
		}
	}
	if _, err := restore([]byte(`{"type":"text"}`), "resource.text", payload); err == nil {
		t.Error("a resource field restored into a block without a resource object")
	}
	if _, err := restore([]byte(`{"type":"text"}`), "other", payload); err == nil {
		t.Error("an unknown field was accepted")
	}
}
