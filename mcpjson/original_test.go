package mcpjson

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
		got, err := Restore([]byte(c.block), c.field, payload)
		if err != nil {
			t.Errorf("%s at %s: %v", c.block, c.field, err)
		} else if !bytes.Equal(got.Bytes(), []byte(c.want)) {
			t.Errorf("%s at %s:\n got  %s\n want %s", c.block, c.field, got.Bytes(), c.want)
		}
	}
	if _, err := Restore([]byte(`{"type":"text"}`), "resource.text", payload); err == nil {
		t.Error("a resource field restored into a block without a resource object")
	}
	if _, err := Restore([]byte(`{"type":"text"}`), "other", payload); err == nil {
		t.Error("an unknown field was accepted")
	}
}

// TestRestoreKeepsOrder: Restore puts a payload back in its place (the null
// an upstream left there) or, for a block from a bridge that left the
// member out, last; the other members keep their order and bytes.
func TestRestoreKeepsOrder(t *testing.T) {
	for _, c := range []struct {
		block, field, payload, want string
	}{
		{`{"type":"text","_meta":{"b":1,"a":2},"text":null,"annotations":{"priority":0.5}}`, "text", "héllo\n\"",
			`{"type":"text","_meta":{"b":1,"a":2},"text":"héllo\n\"","annotations":{"priority":0.5}}`},
		{`{"type":"image","data":null,"mimeType":"image/png"}`, "data", "\x00\x01\x02",
			`{"type":"image","data":"AAEC","mimeType":"image/png"}`},
		{`{"type":"resource","resource":{"uri":"file:///x","blob":null,"mimeType":"application/zip"},"z":0}`, "resource.blob", "PK",
			`{"type":"resource","resource":{"uri":"file:///x","blob":"UEs=","mimeType":"application/zip"},"z":0}`},
		{`{"type":"resource","resource":{"uri":"file:///t","mimeType":"text/csv"}}`, "resource.text", "a,b",
			`{"type":"resource","resource":{"uri":"file:///t","mimeType":"text/csv","text":"a,b"}}`},
		{`{"type":"text"}`, "text", "old bridge", `{"type":"text","text":"old bridge"}`},
	} {
		got, err := Restore([]byte(c.block), c.field, []byte(c.payload))
		if err != nil {
			t.Errorf("Restore(%s, %s): %v", c.block, c.field, err)
		} else if string(got.Bytes()) != c.want {
			t.Errorf("Restore(%s, %s):\n got %s\nwant %s", c.block, c.field, got.Bytes(), c.want)
		}
	}
	if _, err := Restore([]byte(`{"type":"resource"}`), "resource.text", nil); err == nil {
		t.Error("restore into a block without its resource object succeeded")
	}
}
