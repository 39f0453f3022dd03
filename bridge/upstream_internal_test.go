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
		if err != nil || string(got) != c.want {
			t.Errorf("restore(%s, %s):\n got %s (%v)\nwant %s", c.block, c.field, got, err, c.want)
		}
	}
	if _, err := restore([]byte(`{"type":"resource"}`), "resource.text", nil); err == nil {
		t.Error("restore into a block without its resource object succeeded")
	}
}

// TestWithoutMember: initialize params lose their transport object and
// nothing else moves.
func TestWithoutMember(t *testing.T) {
	in := `{"protocolVersion":"2025-11-25","transport":{"type":"mcp-flow","encodings":["cbor"]},"clientInfo":{"name":"c","version":"1"},"capabilities":{}}`
	want := `{"protocolVersion":"2025-11-25","clientInfo":{"name":"c","version":"1"},"capabilities":{}}`
	if got, err := withoutMember([]byte(in), "transport"); err != nil || string(got) != want {
		t.Fatalf("got %s (%v), want %s", got, err, want)
	}
	if got, _ := withoutMember([]byte(want), "transport"); string(got) != want {
		t.Fatalf("without a transport: %s", got)
	}
}
