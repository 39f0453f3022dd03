package core

import "testing"

// TestLinkName: a resource_link's name is a file name made from the
// stream's tag and MIME type, never the link's URL.
func TestLinkName(t *testing.T) {
	for _, c := range []struct {
		tag  uint32
		mime string
		want string
	}{
		{1, "application/octet-stream", "stream-1.bin"}, {2, "", "stream-2.bin"}, {3, "text/plain; charset=utf-8", "stream-3.txt"},
		{4, "application/json", "stream-4.json"}, {5, "image/png", "stream-5.png"}, {6, "x-unknown/x-nothing", "stream-6.bin"},
	} {
		if got := linkName(c.tag, c.mime); got != c.want {
			t.Errorf("linkName(%d, %q) = %q, want %q", c.tag, c.mime, got, c.want)
		}
	}
}
