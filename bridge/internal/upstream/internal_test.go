package bridge

import "testing"

// TestRestoreKeepsOrder: restore puts a payload back in its place (the null
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
		got, err := restore([]byte(c.block), c.field, []byte(c.payload))
		if err != nil {
			t.Errorf("restore(%s, %s): %v", c.block, c.field, err)
		} else if string(got.Bytes()) != c.want {
			t.Errorf("restore(%s, %s):\n got %s\nwant %s", c.block, c.field, got.Bytes(), c.want)
		}
	}
	if _, err := restore([]byte(`{"type":"resource"}`), "resource.text", nil); err == nil {
		t.Error("restore into a block without its resource object succeeded")
	}
}
