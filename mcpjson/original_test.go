package bridge

import (
	"bytes"
	"encoding/base64"
	"testing"
)

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
		if err != nil {
			t.Errorf("%s at %s: %v", c.block, c.field, err)
		} else if !bytes.Equal(got.Bytes(), []byte(c.want)) {
			t.Errorf("%s at %s:\n got  %s\n want %s", c.block, c.field, got.Bytes(), c.want)
		}
	}
	if _, err := restore([]byte(`{"type":"text"}`), "resource.text", payload); err == nil {
		t.Error("a resource field restored into a block without a resource object")
	}
	if _, err := restore([]byte(`{"type":"text"}`), "other", payload); err == nil {
		t.Error("an unknown field was accepted")
	}
}
