package flow_test

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
)

// TestStreamSizeAsProgress: a tool that knows the size of its execution
// streams tells it as progress in bytes before the result (spec §6.3), in
// every encoding, by datagram or on the control stream, so that the caller
// has it when Call returns; ordinary progress is not taken for it.
func TestStreamSizeAsProgress(t *testing.T) {
	const each, streams = 100_000, 3
	for _, enc := range []codec.Name{codec.JSON, codec.CBOR, codec.Protobuf} {
		for _, datagrams := range []bool{true, false} {
			name := string(enc) + "/control"
			if datagrams {
				name = string(enc) + "/datagrams"
			}
			t.Run(name, func(t *testing.T) {
				srv := startServer(t, nil)
				s := dial(t, srv, func(c *flow.ClientConfig) {
					c.Encodings = []codec.Name{enc}
					c.DisableDatagrams = !datagrams
				})
				if s.DatagramsEnabled() != datagrams || s.Encoding() != enc {
					t.Fatalf("session: datagrams %v, encoding %s", s.DatagramsEnabled(), s.Encoding())
				}
				var mu sync.Mutex
				var got []flow.Progress
				record := flow.WithProgress(func(p flow.Progress) { mu.Lock(); got = append(got, p); mu.Unlock() })
				r := callTool(t, s, "generate", map[string]any{"bytes": each, "streams": streams}, record)
				mu.Lock()
				seen := append([]flow.Progress(nil), got...)
				mu.Unlock()
				if len(seen) != 1 || !seen[0].Bytes() || seen[0].Total != each*streams || seen[0].Progress != 0 {
					t.Fatalf("progress before the result: %+v, want one in bytes, 0 of %d", seen, each*streams)
				}
				var total int64
				for _, ref := range r.Refs {
					sr, err := r.Stream(context.Background(), ref.StreamTag)
					if err != nil {
						t.Fatal(err)
					}
					n, err := io.Copy(io.Discard, sr)
					if err != nil {
						t.Fatal(err)
					}
					total += n
				}
				if total != int64(seen[0].Total) {
					t.Fatalf("the streams carried %d bytes, the progress said %v", total, seen[0].Total)
				}
				// slow's progress counts steps, not bytes.
				mu.Lock()
				got = nil
				mu.Unlock()
				callTool(t, s, "slow", map[string]any{"steps": 2, "delayMs": 1}, record)
				mu.Lock()
				defer mu.Unlock()
				if len(got) == 0 {
					t.Fatal("no progress from slow")
				}
				for _, p := range got {
					if p.Bytes() {
						t.Fatalf("slow's progress taken for bytes: %+v", p)
					}
				}
			})
		}
	}
}
