package bench

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// heapTop writes the server's heap profile's top functions (in-use space,
// flat, KiB per session) to MCP_FLOW_BENCH_SERIES/BenchmarkSessions.heap.
func heapTop(b *testing.B, srv *serverProc, sessions int) {
	dir := os.Getenv("MCP_FLOW_BENCH_SERIES")
	if dir == "" || sessions == 0 {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	prof := filepath.Join(dir, "BenchmarkSessions.heap.prof") // kept for pprof
	srv.profile(b, prof)
	srv.goroutines(b, filepath.Join(dir, "BenchmarkSessions.goroutines"))
	out, err := exec.Command("go", "tool", "pprof", "-top", "-sample_index=inuse_space", "-nodecount=12", prof).CombinedOutput()
	if err != nil {
		b.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	var sb strings.Builder
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasSuffix(f[1], "%") {
			continue
		}
		kib, ok := parseSize(f[0])
		if !ok {
			continue
		}
		fmt.Fprintf(&sb, "%.2f %s\n", kib/float64(sessions), strings.Join(f[5:], " "))
	}
	if err := os.WriteFile(filepath.Join(dir, "BenchmarkSessions.heap"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	out, err = exec.Command("go", "tool", "pprof", "-traces", "-sample_index=inuse_space", prof).CombinedOutput()
	if err != nil {
		b.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	owners := heapOwners(string(out))
	sb.Reset()
	for _, o := range heapOwnerNames {
		fmt.Fprintf(&sb, "%.2f %s\n", owners[o]/float64(sessions), o)
	}
	if err := os.WriteFile(filepath.Join(dir, "BenchmarkSessions.owners"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	out, err = exec.Command("go", "tool", "pprof", "-traces", "-sample_index=alloc_space", prof).CombinedOutput()
	if err != nil {
		b.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	heapFragments(b, srv, sessions, dir, allocBySize(string(out)))
}

// allocBySize sums a heap profile's allocated space (`go tool pprof
// -traces -sample_index=alloc_space` output), in KiB, by object size (its
// "bytes:" label, in KiB: pprof rounds it).
func allocBySize(traces string) map[float64]float64 {
	out := map[float64]float64{}
	lines := strings.Split(traces, "\n")
	for i := 0; i+1 < len(lines); i++ {
		l, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "bytes:")
		if !ok {
			continue
		}
		size, ok1 := parseSize(strings.TrimSpace(l))
		f := strings.Fields(lines[i+1])
		if len(f) < 2 || !ok1 {
			continue
		}
		if v, ok := parseSize(f[0]); ok {
			out[size] += v
		}
	}
	return out
}

// heapFragments has the server free what it can with debug.FreeOSMemory
// and then write a heap dump (to a temporary file, as large as its heap);
// it reports how much the first changed HeapInuse, and writes the object
// sizes whose spans hold the most free space to
// MCP_FLOW_BENCH_SERIES/BenchmarkSessions.spans ("size free-KiB spans-KiB
// live-KiB allocated-KiB" per session, a line each, after a line "all …"
// with the totals): allocated is what the heap profile (alloc, sampled)
// says the process allocated of that size since it started, short-lived
// objects included.
func heapFragments(b *testing.B, srv *serverProc, sessions int, dir string, alloc map[float64]float64) {
	f, err := os.CreateTemp("", "mcp-flow-bench-heapdump")
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	defer os.Remove(f.Name())
	if _, err := io.WriteString(srv.stdin, "heapdump "+f.Name()+"\n"); err != nil {
		b.Fatal(err)
	}
	var in0, live0, in1, live1, released uint64
	if !srv.lines.Scan() {
		b.Fatalf("the server process did not write its heap dump; stderr:\n%s", srv.stderr)
	}
	if _, err := fmt.Sscanf(srv.lines.Text(), "heapdump: inuse %d live %d; after FreeOSMemory: inuse %d live %d released %d", &in0, &live0, &in1, &live1, &released); err != nil {
		b.Fatalf("server said %q: %v", srv.lines.Text(), err)
	}
	b.ReportMetric((float64(in1)-float64(in0))/float64(sessions)/1024, "KiB-heap-change-FreeOSMemory/session")
	df, err := os.Open(f.Name())
	if err != nil {
		b.Fatal(err)
	}
	classes, err := heapSpans(df)
	df.Close()
	if err != nil {
		b.Fatalf("reading the server's heap dump: %v", err)
	}
	var all spanClass
	list := make([]*spanClass, 0, len(classes))
	for _, c := range classes {
		list = append(list, c)
		all.live += c.live
		all.spanBytes += c.spanBytes
	}
	slices.SortFunc(list, func(x, y *spanClass) int { return cmp.Compare(y.spanBytes-y.live, x.spanBytes-x.live) })
	kib := func(v uint64) float64 { return float64(v) / float64(sessions) / 1024 }
	var sb strings.Builder
	allocOf := func(size uint64) float64 { // the profile's size labels are rounded
		var sum float64
		for k, v := range alloc {
			if d := k*1024 - float64(size); d > -0.01*float64(size) && d < 0.01*float64(size) {
				sum += v
			}
		}
		return sum / float64(sessions)
	}
	var allAlloc float64
	for _, v := range alloc {
		allAlloc += v
	}
	fmt.Fprintf(&sb, "all %.2f %.2f %.2f %.2f\n", kib(all.spanBytes-all.live), kib(all.spanBytes), kib(all.live), allAlloc/float64(sessions))
	for _, c := range list[:min(8, len(list))] {
		fmt.Fprintf(&sb, "%d %.2f %.2f %.2f %.2f\n", c.size, kib(c.spanBytes-c.live), kib(c.spanBytes), kib(c.live), allocOf(c.size))
	}
	b.Logf("server heap dump: HeapInuse %.2f KiB/session (%.2f after FreeOSMemory), spans found %.2f; free inside spans by object size (size free spans live allocated, KiB/session):\n%s", kib(in0), kib(in1), kib(all.spanBytes), sb.String())
	if err := os.WriteFile(filepath.Join(dir, "BenchmarkSessions.spans"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

// heapOwnerNames are heapOwners' categories, in the order reported.
var heapOwnerNames = []string{"quic-go (connection)", "quic-go packet buffers (packets being sent or received)", "crypto/tls (handshake state, keys)", "webtransport-go", "quic-go/http3",
	"MCP-Flow (flow, wire)", "goroutine records (runtime.malg)", "other (runtime, standard library)"}

// heapOwners sums a heap profile's in-use space (`go tool pprof -traces`
// output), in KiB, by owner: the code nearest the allocation, skipping the
// runtime and the standard library's containers (bufio, bytes, context…),
// that belongs to MCP-Flow, webtransport-go, quic-go or crypto/tls; a
// goroutine's record (runtime.malg: Go keeps it once made) and quic-go's
// packet buffers (held only while packets are in flight) are their own.
func heapOwners(traces string) map[string]float64 {
	out := map[string]float64{}
	var kib float64
	var frames []string
	flush := func() {
		if len(frames) > 0 {
			out[heapOwner(frames)] += kib
		}
		frames = nil
	}
	lines := strings.Split(traces, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		switch {
		case strings.HasPrefix(l, "-----------+"):
			flush()
		case strings.HasPrefix(l, "bytes:") && i+1 < len(lines):
			flush()
			f := strings.Fields(lines[i+1])
			i++
			if len(f) < 2 {
				continue
			}
			v, ok := parseSize(f[0])
			if !ok {
				continue
			}
			kib, frames = v, []string{f[1]}
		case len(frames) > 0 && l != "":
			frames = append(frames, l)
		}
	}
	flush()
	return out
}

func heapOwner(frames []string) string {
	for _, fr := range frames {
		switch {
		case strings.HasPrefix(fr, "runtime.malg"):
			return "goroutine records (runtime.malg)"
		case strings.HasPrefix(fr, "github.com/quic-go/quic-go.getPacketBuffer"), strings.HasPrefix(fr, "github.com/quic-go/quic-go.getLargePacketBuffer"):
			// Pooled; in use only while a packet is queued to be sent
			// (the keep-alives of every session) or being handled.
			return "quic-go packet buffers (packets being sent or received)"
		}
	}
	for _, fr := range frames {
		switch {
		case strings.HasPrefix(fr, "github.com/mcp-flow/mcp-flow/"):
			return "MCP-Flow (flow, wire)"
		case strings.HasPrefix(fr, "github.com/quic-go/webtransport-go"):
			return "webtransport-go"
		case strings.HasPrefix(fr, "github.com/quic-go/quic-go/http3"):
			return "quic-go/http3"
		case strings.HasPrefix(fr, "github.com/quic-go/quic-go"):
			return "quic-go (connection)"
		case strings.HasPrefix(fr, "crypto/"), strings.HasPrefix(fr, "vendor/golang.org/x/crypto"):
			return "crypto/tls (handshake state, keys)"
		}
	}
	return "other (runtime, standard library)"
}

// parseSize reads pprof's sizes ("12.50MB", "512kB", "64B") in KiB.
func parseSize(s string) (float64, bool) {
	for _, u := range []struct {
		suffix string
		kib    float64
	}{{"GB", 1 << 20}, {"MB", 1 << 10}, {"kB", 1}, {"B", 1.0 / 1024}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f * u.kib, err == nil
		}
	}
	return 0, false
}

// spanClass is what a heap dump says of one object size: the live objects
// of that size and the spans that hold them.
type spanClass struct {
	size, objects, spans, live, spanBytes uint64
}

// multiPageSpans gives the span size of the Go 1.26 size classes whose
// spans are more than one 8 KiB page (internal/runtime/gc/sizeclasses.go);
// every other class up to 32 KiB has one-page spans, and a larger object
// has a span of its own.
var multiPageSpans = map[uint64]uint64{1408: 16384, 1792: 16384, 2304: 16384, 3072: 24576, 3200: 16384, 3456: 24576,
	4864: 24576, 5376: 16384, 6144: 24576, 6528: 32768, 6784: 40960, 6912: 49152, 9472: 57344, 9728: 49152, 10240: 40960,
	10880: 32768, 12288: 24576, 13568: 40960, 14336: 57344, 16384: 16384, 18432: 73728, 19072: 57344, 20480: 40960,
	21760: 65536, 24576: 24576, 27264: 81920, 28672: 57344, 32768: 32768}

// heapSpans reads a heap dump (runtime/debug.WriteHeapDump, format
// go1.7) and sums, per object size, the live objects and the spans that
// hold them: the runtime dumps the live objects span after span, in
// address order within a span, so a span starts where the size changes,
// the address goes back, or the address leaves the span of the object
// before. The spans' bytes add up to HeapInuse; what they hold beyond
// their live objects is the heap's fragmentation.
func heapSpans(r io.Reader) (map[uint64]*spanClass, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	hdr := make([]byte, len("go1.7 heap dump\n"))
	if _, err := io.ReadFull(br, hdr); err != nil || string(hdr) != "go1.7 heap dump\n" {
		return nil, fmt.Errorf("not a heap dump (%q, %v)", hdr, err)
	}
	var err error
	u := func() uint64 {
		if err != nil {
			return 0
		}
		var v uint64
		v, err = binary.ReadUvarint(br)
		return v
	}
	skip := func(n uint64) {
		if err == nil {
			_, err = br.Discard(int(n))
		}
	}
	out := map[uint64]*spanClass{}
	var cur *spanClass
	var end, last uint64
	for err == nil {
		switch tag := u(); tag {
		case 6: // params
			u()
			u()
			u()
			u()
			skip(u())
			skip(u())
			u()
		case 3: // type
			u()
			u()
			skip(u())
			u()
		case 8: // itab
			u()
			u()
		case 1: // object: address, contents, pointer fields
			addr, size := u(), u()
			skip(size)
			for k := u(); k != 0 && err == nil; k = u() {
				u()
			}
			c := out[size]
			if c == nil {
				c = &spanClass{size: size}
				out[size] = c
			}
			c.objects++
			c.live += size
			if c != cur || addr <= last || addr >= end {
				span := uint64(8192)
				switch {
				case size > 32768:
					span = (size + 8191) &^ 8191
				case multiPageSpans[size] > 0:
					span = multiPageSpans[size]
				}
				base := addr &^ 8191 // page-aligned, a whole number of objects below addr
				for (addr-base)%size != 0 && addr-base < span {
					base -= 8192
				}
				cur, end = c, base+span
				c.spans++
				c.spanBytes += span
			}
			last = addr
		default: // the objects are done (goroutines, roots, memstats follow)
			return out, err
		}
	}
	return out, err
}
