package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
cpu: Test CPU
BenchmarkLarge/flow-cbor/256MiB-2   1   800000000 ns/op   330.00 MB/s   5.9 cpu-s/GiB   28.0 peak-RSS-MiB
BenchmarkLarge/bare-webtransport/256MiB/write=32k-2   1   800000000 ns/op   250.00 MB/s
BenchmarkLarge/bare-webtransport/256MiB/write=256k-2   1   800000000 ns/op   300.00 MB/s
BenchmarkLarge/bare-webtransport/256MiB/write=1024k-2   1   800000000 ns/op   280.00 MB/s
BenchmarkDecode/tools_call_result_image_1MiB/cbor-2   100   300 ns/op   100 cpu-ns/op   750001 bytes/msg
BenchmarkDecode/tools_call_result_image_1MiB/json-2   100   200 ns/op   200 cpu-ns/op   1000000 bytes/msg
BenchmarkEcho/flow-interleaved/c=16-2   7   1 ns/op   1.2 cbor/json   0.8 protobuf/json
BenchmarkSessions-2   1   1 ns/op   70.5 KiB-heap/session   0 burst-refused   2000 sessions   2000 sessions-asked
BenchmarkPing/flow-cbor-2   1000   50000 ns/op   40.0 p50-µs   300 p99-µs
BenchmarkPing/bare-webtransport-2   1000   40000 ns/op   30.0 p50-µs   250 p99-µs
BenchmarkPing/flow-cbor-vs-bare-webtransport-2   1   1000000000 ns/op   40.0 flow-p50-µs   30.0 bare-p50-µs   1.33 flow/bare
BenchmarkStreamVsBare-2   1   1 ns/op   330 flow-MB/s   300 bare-best-MB/s   256 bare-best-write-KiB   300 bare-write=256k-MB/s   250 bare-write=32k-MB/s   1.1 flow/bare   3 rounds
`

func TestParseAndRatios(t *testing.T) {
	rep := parse(strings.NewReader(sample))
	if rep.header["cpu"] != "Test CPU" || len(rep.results) != 12 {
		t.Fatalf("parsed %d results, header %v", len(rep.results), rep.header)
	}
	if v, ok := rep.get("BenchmarkLarge/flow-cbor/256MiB", "MB/s"); !ok || v != 330 {
		t.Fatalf("MB/s = %v, %v", v, ok)
	}
	got := map[string]ratio{}
	for _, r := range rep.ratios() {
		got[r.what] = r
	}
	if r := got[goals[0].what]; !r.found || r.value != 1.1 || !r.ok {
		t.Fatalf("stream ratio %+v: want 1.1 (330/300 against the best write size)", r)
	}
	if v, name, ok := rep.best("BenchmarkLarge/bare-webtransport/256MiB/", "MB/s"); !ok || v != 300 || name != "BenchmarkLarge/bare-webtransport/256MiB/write=256k" {
		t.Fatalf("best = %v %q %v, want 300 at write=256k", v, name, ok)
	}
	if w := rep.bareWrites(rep.results[streamVsBare].metrics); w != "32k writes 250, 256k writes 300 (best)" {
		t.Fatalf("bare writes %q", w)
	}
	for _, r := range got {
		switch {
		case strings.HasPrefix(r.what, "CBOR vs JSON size"):
			if !r.found || r.ok || r.verdict() != "ceiling" {
				t.Errorf("CBOR size %+v: a ceiling is reported, never missed", r)
			}
		case strings.HasPrefix(r.what, "CBOR vs JSON decode time"):
			if !r.found || r.value != 0.5 || !r.ok {
				t.Errorf("CBOR decode %+v: want 0.5, from CPU time (100/200), not ns/op", r)
			}
		case strings.HasPrefix(r.what, "echo calls/s at concurrency 16, cbor vs json"):
			if !r.found || r.value != 1.2 || !r.ok {
				t.Errorf("echo cbor %+v: want 1.2 from the interleaved rounds", r)
			}
		case strings.HasPrefix(r.what, "echo calls/s at concurrency 16, protobuf vs json"):
			if !r.found || r.value != 0.8 || r.ok {
				t.Errorf("echo protobuf %+v: 0.8 misses 0.9", r)
			}
		case strings.HasPrefix(r.what, "heap per idle session"):
			if !r.found || r.value != 70.5 || r.ok || r.verdict() != "MISSED" {
				t.Errorf("heap %+v: 70.5 KiB misses 64", r)
			}
		case strings.HasPrefix(r.what, "burst of 1,000"):
			if !r.found || r.value != 0 || !r.ok {
				t.Errorf("burst %+v: none refused meets the goal", r)
			}
		case strings.HasPrefix(r.what, "idle sessions held"):
			if !r.found || r.value != 1 || !r.ok {
				t.Errorf("sessions %+v", r)
			}
		}
	}
	if r := got["idle ping p50 vs bare webtransport-go ping-pong (median of interleaved rounds)"]; !r.found || r.ok || r.value != 1.33 {
		t.Fatalf("ping ratio %+v: 1.33 misses 1.25", r)
	}
	if r := got[goals[1].what]; r.found {
		t.Fatalf("a ratio without its baseline was computed: %+v", r)
	}
}

func TestSVG(t *testing.T) {
	s := svgBars("t", "MB/s", []string{"flow-cbor", "bare-tcp"}, []float64{330, 2400})
	if !strings.HasPrefix(s, "<svg") || !strings.Contains(s, "flow-cbor") || !strings.Contains(s, ">2400<") {
		t.Fatalf("svg: %s", s)
	}
}

func TestSeriesChart(t *testing.T) {
	s := svgSeries("hol", []string{"flow-cbor", "sdk-stdio"}, [][]point{{{0, 0.2}, {2, 0.3}}, {{0, 5000}, {2, 4998}}})
	if !strings.HasPrefix(s, "<svg") || strings.Count(s, "<polyline") != 2 || !strings.Contains(s, "sdk-stdio") || !strings.Contains(s, ">10000 ms<") {
		t.Fatalf("svg: %s", s)
	}
}

// TestFragments: BenchmarkSessions.spans becomes the sentence of the heap
// goal's miss (the first four sizes) and FreeOSMemory's change is said.
func TestFragments(t *testing.T) {
	dir := t.TempDir()
	spans := "all 13.17 72.09 58.92 155.86\n512 2.00 3.21 1.20 10.50\n64 1.94 3.26 1.32 11.78\n96 1.77 2.22 0.45 9.47\n32 1.22 2.16 0.94 8.19\n768 0.94 4.92 3.99 8.96\n"
	if err := os.WriteFile(filepath.Join(dir, "BenchmarkSessions.spans"), []byte(spans), 0o644); err != nil {
		t.Fatal(err)
	}
	s := fragments(dir, map[string]float64{"KiB-heap-change-FreeOSMemory/session": -0.036})
	for _, want := range []string{"add up to 72.1 KiB per session", "13.2 KiB per session of free space", "512 B (2.0 KiB free in 3.2 KiB of spans; 10.5 KiB of that size allocated per session since the process started, 1.2 KiB live)",
		"32 B (1.2 KiB free", "changed HeapInuse by -0.036 KiB per session"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in:\n%s", want, s)
		}
	}
	if strings.Contains(s, "768 B") {
		t.Errorf("more than four sizes: %s", s)
	}
	if fragments(t.TempDir(), nil) != "" {
		t.Error("a run without the spans file says something of them")
	}
}

func TestGomaxprocsText(t *testing.T) {
	m := map[string]float64{"busy-p99-µs": 110000, "go-runnable-p99-µs": 2000, "go-runnable-max-µs": 40000, "gomaxprocs": 1}
	g := map[string]float64{"busy-p99-µs": 118000, "idle-p99-µs": 20000, "go-runnable-p99-µs": 500, "go-runnable-max-µs": 40000}
	s := gomaxprocsText(m, g)
	if !strings.Contains(s, "p99 118 ms") || !strings.Contains(s, "p99 0.5 ms") || !strings.Contains(s, "is not what makes the busy p99") {
		t.Errorf("gomaxprocsText = %q", s)
	}
	g["busy-p99-µs"] = 30000
	if s := gomaxprocsText(m, g); strings.Contains(s, "is not what makes") {
		t.Errorf("a busy p99 that fell by 73 %%: %q", s)
	}
}
