package bench

import (
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

// TestHeapOwners: pprof's -traces output is summed by the library nearest
// each allocation (a bufio buffer made by wire is MCP-Flow's, a
// bytes.Buffer grown by crypto/tls is crypto's), and a goroutine record and
// a quic-go packet buffer are their own.
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
     bytes:  20kB
    3MB   github.com/quic-go/quic-go.init.0.func2
          sync.(*Pool).Get
          github.com/quic-go/quic-go.getLargePacketBuffer (inline)
          github.com/quic-go/quic-go.(*Conn).sendPacketsWithGSO
-----------+-------------------------------------------------------
`
	got := heapOwners(traces)
	want := map[string]float64{"MCP-Flow (flow, wire)": 2048, "crypto/tls (handshake state, keys)": 1536,
		"goroutine records (runtime.malg)": 512, "quic-go (connection)": 1024, "quic-go packet buffers (packets being sent or received)": 3072}
	if len(got) != len(want) {
		t.Fatalf("owners %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v KiB, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

// TestHeapSpans: the spans heapSpans finds in a heap dump of this process
// add up to its HeapInuse, and their live objects to its HeapAlloc (within
// 10 %: the test's own allocations between the reading of MemStats and the
// dump).
func TestHeapSpans(t *testing.T) {
	keep := make([][]byte, 0, 1000)
	for i := range 1000 {
		keep = append(keep, make([]byte, 100+i%300))
	}
	f, err := os.CreateTemp(t.TempDir(), "heapdump")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	debug.WriteHeapDump(f.Fd())
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	classes, err := heapSpans(f)
	if err != nil {
		t.Fatal(err)
	}
	var live, spans uint64
	for _, c := range classes {
		live += c.live
		spans += c.spanBytes
		if c.spanBytes < c.live {
			t.Errorf("size %d: %d bytes of spans hold %d live bytes", c.size, c.spanBytes, c.live)
		}
	}
	near := func(a, b uint64) bool { return float64(a) > 0.9*float64(b) && float64(a) < 1.1*float64(b) }
	if !near(spans, m.HeapInuse) || !near(live, m.HeapAlloc) {
		t.Errorf("spans %d bytes (HeapInuse %d), live %d bytes (HeapAlloc %d)", spans, m.HeapInuse, live, m.HeapAlloc)
	}
	runtime.KeepAlive(keep)
}
