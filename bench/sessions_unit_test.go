package bench

import "testing"

// TestHeapOwners: pprof's -traces output is summed by the library nearest
// each allocation (a bufio buffer made by wire is MCP-Flow's, a
// bytes.Buffer grown by crypto/tls is crypto's), and a goroutine record is
// its own.
func TestHeapOwners(t *testing.T) {
	const traces = `File: bench.test
-----------+-------------------------------------------------------
     bytes:  4kB
    2MB   bufio.NewReaderSize
          github.com/mcp-flow/mcp-flow/wire.NewFrameReader (inline)
          github.com/mcp-flow/mcp-flow/flow.(*Session).serve
-----------+-------------------------------------------------------
     bytes:  2.62kB
    1.5MB   bytes.growSlice
          bytes.(*Buffer).grow
          crypto/tls.(*Conn).quicWaitForSignal
          github.com/quic-go/quic-go/internal/handshake.(*cryptoSetup).StartHandshake
-----------+-------------------------------------------------------
     bytes:  448B
    512kB   runtime.mallocgc
          runtime.newobject
          runtime.malg
          github.com/mcp-flow/mcp-flow/flow.(*Session).serve
-----------+-------------------------------------------------------
     bytes:  1kB
    1MB   github.com/quic-go/quic-go.newSendStream
          github.com/quic-go/quic-go.(*streamsMap).OpenStream
-----------+-------------------------------------------------------
`
	got := heapOwners(traces)
	want := map[string]float64{"MCP-Flow (flow, wire)": 2048, "crypto/tls (handshake state, keys)": 1536,
		"goroutine records (runtime.malg)": 512, "quic-go (connection)": 1024}
	if len(got) != len(want) {
		t.Fatalf("owners %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v KiB, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
