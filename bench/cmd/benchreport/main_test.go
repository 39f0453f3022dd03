package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
cpu: Test CPU
BenchmarkLarge/flow-cbor/256MiB-2   1   800000000 ns/op   330.00 MB/s   5.9 cpu-s/GiB   28.0 peak-RSS-MiB
BenchmarkLarge/bare-webtransport/256MiB-2   1   800000000 ns/op   300.00 MB/s
BenchmarkPing/flow-cbor-2   1000   50000 ns/op   40.0 p50-µs   300 p99-µs
BenchmarkPing/bare-webtransport-2   1000   40000 ns/op   30.0 p50-µs   250 p99-µs
`

func TestParseAndRatios(t *testing.T) {
	rep := parse(strings.NewReader(sample))
	if rep.header["cpu"] != "Test CPU" || len(rep.results) != 4 {
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
		t.Fatalf("stream ratio %+v", r)
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
