package conformance

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/quic-go/webtransport-go"
)

// The judge writes the rules of streams.go from docs/spec.md alone; these
// tests hold its writing to the implementation's, so that the two, written
// independently, are shown to agree.

// TestGeneratedBytesAgree: the judge's generate bytes are demotools'
// byte for byte, at block edges and read in uneven pieces.
func TestGeneratedBytesAgree(t *testing.T) {
	const block = 64 << 10
	for _, n := range []int64{0, 1, 7, 8, 9, block - 1, block, block + 1, block + 8, 3*block + 12345, 8 << 20} {
		want, err := io.ReadAll(demotools.Generate(n))
		if err != nil {
			t.Fatal(err)
		}
		got := readUneven(t, generated(n))
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Fatalf("generated(%d): %d bytes, demotools %d; first difference at byte %d", n, len(got), len(want), i)
		}
	}
}

// readUneven reads r to its end in pieces of 1, 2, 3... 9999 bytes and
// round again, so that reads start and end everywhere in a block.
func readUneven(t *testing.T, r io.Reader) []byte {
	t.Helper()
	var out []byte
	buf := make([]byte, 9999)
	for size := 1; ; size = size%len(buf) + 1 {
		n, err := r.Read(buf[:size])
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestResetCodesAgree: the judge's reset codes are flow's for the same
// reasons (spec §1).
func TestResetCodesAgree(t *testing.T) {
	for _, c := range []struct {
		name  string
		judge webtransport.StreamErrorCode
		code  jsonrpc.Code
	}{
		{"writer failed", resetWriterFailed, jsonrpc.CodeInternalError},
		{"no ref", resetNoRef, jsonrpc.CodeInvalidStreamRef},
		{"injection", resetInjection, jsonrpc.CodeStreamInjection},
		{"cancelled", resetCancelled, jsonrpc.CodeRequestCancelled},
	} {
		if want := flow.StreamCode(c.code); c.judge != want {
			t.Errorf("%s: the judge resets with %d, flow with %d", c.name, c.judge, want)
		}
	}
}

// TestRefBlockAgrees: the judge writes a ref/stream block as spec §5.2
// spells it and as flow writes it, and reads flow's.
func TestRefBlockAgrees(t *testing.T) {
	const spec = `{"type":"ref/stream","streamTag":1,"mimeType":"text/plain"}`
	got, err := json.Marshal(newRef(1, "text/plain"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != spec {
		t.Errorf("the judge writes %s, spec §5.2 %s", got, spec)
	}
	ours, err := json.Marshal(flow.StreamRef{Type: protocol.ContentTypeRef, StreamTag: 1, MimeType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	if string(ours) != spec {
		t.Errorf("flow writes %s, spec §5.2 %s", ours, spec)
	}
	r, err := jsonrpc.NewResult(jsonrpc.Int64ID(7), map[string]any{"content": []any{
		map[string]string{"type": "text", "text": "x"},
		flow.StreamRef{Type: protocol.ContentTypeRef, StreamTag: 3, MimeType: "application/octet-stream"},
		flow.StreamRef{Type: protocol.ContentTypeRef, StreamTag: 4},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []refBlock{newRef(3, "application/octet-stream"), newRef(4, "")}
	if rs := refs(r); len(rs) != len(want) || rs[0] != want[0] || rs[1] != want[1] {
		t.Errorf("the judge reads %+v from flow's content, want %+v", rs, want)
	}
}
