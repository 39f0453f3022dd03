package main

import (
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
BenchmarkDecode/tools_call_result_image_1MiB/cbor-2   100   100 ns/op   750001 bytes/msg
BenchmarkDecode/tools_call_result_image_1MiB/json-2   100   200 ns/op   1000000 bytes/msg
BenchmarkSessions-2   1   1 ns/op   70.5 KiB-heap/session   0 burst-refused   2000 sessions   2000 sessions-asked
BenchmarkPing/flow-cbor-2   1000   50000 ns/op   40.0 p50-µs   300 p99-µs
BenchmarkPing/bare-webtransport-2   1000   40000 ns/op   30.0 p50-µs   250 p99-µs
BenchmarkStreamVsBare-2   1   1 ns/op   330 flow-MB/s   300 bare-best-MB/s   256 bare-best-write-KiB   300 bare-write=256k-MB/s   250 bare-write=32k-MB/s   1.1 flow/bare   3 rounds
`

func TestParseAndRatios(t *testing.T) {
	rep := parse(strings.NewReader(sample))
	if rep.header["cpu"] != "Test CPU" || len(rep.results) != 10 {
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
	if r := got["idle ping p50 vs bare webtransport-go ping-pong"]; !r.found || r.ok {
		t.Fatalf("ping ratio %+v: 40/30 misses 1.25", r)
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
