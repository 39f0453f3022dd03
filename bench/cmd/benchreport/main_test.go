package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
BenchmarkSessions-2   1   1 ns/op   70.5 KiB-heap/session   62.5 KiB-heap/bare-stream-session   60 KiB-heap/bare-nostream-session   8.0 KiB-own-live/session   2.1 KiB-own-profile/session   0 burst-refused   2000 sessions   2000 sessions-asked
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
		case strings.HasPrefix(r.what, "heap per idle session, server process alone"):
			if !r.found || r.value != 70.5 || r.ok || r.verdict() != "reported" || !r.bareFound || r.bareValue != 62.5 {
				t.Errorf("heap %+v: 70.5 KiB over 64 is reported, never missed, beside the bare session's 62.5", r)
			}
		case strings.HasPrefix(r.what, "heap per idle session vs a bare"):
			if !r.found || r.value != 70.5/62.5 || r.ok || r.verdict() != "MISSED" {
				t.Errorf("heap ratio %+v: 1.128 misses 1.1", r)
			}
		case strings.HasPrefix(r.what, "MCP-Flow's own share"):
			if !r.found || r.value != 8 || !r.ok {
				t.Errorf("own share %+v: 8 KiB meets ≤ 8", r)
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

// stallOut is a run with the stall charts' rows: the head-of-line
// benchmark's five targets and a variant that is not drawn, the shaped
// link's, and the large result for the summary.
const stallOut = `cpu: Test CPU
BenchmarkLarge/flow-cbor/16MiB-2   1   1 ns/op   300.0 MB/s
BenchmarkLarge/flow-cbor/256MiB-2   1   1 ns/op   431.0 MB/s
BenchmarkLarge/sdk-http/256MiB-2   1   1 ns/op   13.2 MB/s
BenchmarkLarge/ts-sdk-http/256MiB-2   1   1 ns/op   27.5 MB/s
BenchmarkLarge/sdk-stdio/256MiB-2   1   1 ns/op   11.8 MB/s
BenchmarkLarge/ts-sdk-stdio/256MiB-2   1   1 ns/op   9.5 MB/s
BenchmarkHeadOfLine/flow-json-2   1   1 ns/op   9000 busy-p99-µs   256 result-MiB
BenchmarkHeadOfLine/flow-cbor-2   1   1 ns/op   8900 busy-p99-µs   256 result-MiB
BenchmarkHeadOfLine/sdk-stdio-2   1   1 ns/op   2447000 busy-p99-µs   64 result-MiB
BenchmarkHeadOfLine/sdk-http-2   1   1 ns/op   301000 busy-p99-µs   64 result-MiB
BenchmarkHeadOfLine/ts-sdk-stdio-2   1   1 ns/op   2500000 busy-p99-µs   64 result-MiB
BenchmarkHeadOfLine/ts-sdk-http-2   1   1 ns/op   1232000 busy-p99-µs   64 result-MiB
BenchmarkShapedLink/flow-cbor-2   1   1 ns/op   30000 busy-p99-µs   64 result-MiB   100 link-Mbit/s   20 rtt-ms
BenchmarkShapedLink/sdk-http-2   1   1 ns/op   900000 busy-p99-µs   16 result-MiB   100 link-Mbit/s   20 rtt-ms
`

// writeStallSeries writes a series file for each of names (benchmark
// rows), each a different shape of latencies over 0-2 s.
func writeStallSeries(t *testing.T, dir string, names ...string) {
	t.Helper()
	for k, n := range names {
		var b strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&b, "%d.000 %.3f\n", 2*i, 0.3+float64(k*i%997))
		}
		if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(n, "/", "__")+".series"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var gridRE = regexp.MustCompile(`<line x1="\d+" x2="\d+" y1="([\d.]+)" y2="[\d.]+" stroke="#ddd"/><text [^>]*>([\d.]+) ms</text>`)

// checkLogAxis fails unless svg's y gridlines are powers of ten equally
// spaced (a log axis) spanning at least 0.1 to 100 ms.
func checkLogAxis(t *testing.T, name, svg string) {
	t.Helper()
	m := gridRE.FindAllStringSubmatch(svg, -1)
	if len(m) < 5 || !strings.Contains(svg, "log scale") {
		t.Fatalf("%s: %d gridlines, want a log axis of 5 or more decades:\n%.600s", name, len(m), svg)
	}
	var prevY, prevV, gap float64
	for i, g := range m {
		y, _ := strconv.ParseFloat(g[1], 64)
		v, _ := strconv.ParseFloat(g[2], 64)
		if i > 0 {
			if math.Abs(v/prevV-10) > 1e-9 {
				t.Errorf("%s: gridline %g after %g, want ×10", name, v, prevV)
			}
			if i > 1 && math.Abs((prevY-y)-gap) > 0.2 {
				t.Errorf("%s: decade %g is %.1f px high, the one before %.1f", name, v, prevY-y, gap)
			}
			gap = prevY - y
		}
		prevY, prevV = y, v
	}
}

// TestStallCharts: benchreport draws every target's busy series into
// stall.svg (loopback) and stall-shaped.svg (shaped link) on a log axis,
// with a legend, and BENCHMARKS.md shows both; a variant that is not one
// of the targets (flow-json) is left out, and a shaped link with profiles
// gets a chart per profile.
func TestStallCharts(t *testing.T) {
	series, charts := t.TempDir(), t.TempDir()
	targets := []string{"flow-cbor", "sdk-stdio", "sdk-http", "ts-sdk-stdio", "ts-sdk-http"}
	var names []string
	for _, tg := range append([]string{"flow-json"}, targets...) {
		names = append(names, "BenchmarkHeadOfLine/"+tg)
	}
	writeStallSeries(t, series, append(names, "BenchmarkShapedLink/flow-cbor", "BenchmarkShapedLink/sdk-http",
		"BenchmarkShapedLink/flow-cbor-50ms-20mbit-loss1", "BenchmarkShapedLink/sdk-http-50ms-20mbit-loss1", "BenchmarkShapedLink/flow-cbor-unpaced")...)
	rep := parse(strings.NewReader(stallOut))
	md, drawn := rep.markdown(nil, readSeries(series), series, charts)
	if len(drawn) != 3 {
		t.Fatalf("drew %v, want stall.svg, stall-shaped.svg and stall-shaped-lossy.svg", drawn)
	}
	for file, want := range map[string][]string{
		"stall.svg":        {"MCP-Flow (CBOR), 256 MiB", "go-sdk Streamable HTTP, 64 MiB", "go-sdk stdio, 64 MiB", "TS SDK Streamable HTTP, 64 MiB", "TS SDK stdio, 64 MiB"},
		"stall-shaped.svg": {"MCP-Flow (CBOR), 64 MiB", "go-sdk Streamable HTTP, 16 MiB"},
		// the lossy profile's rows, named with its suffix; flow-cbor-unpaced
		// is a variant, drawn in neither.
		"stall-shaped-lossy.svg": {"MCP-Flow (CBOR)", "go-sdk Streamable HTTP"},
	} {
		b, err := os.ReadFile(filepath.Join(charts, file))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if n := strings.Count(s, "<polyline"); n != len(want) {
			t.Errorf("%s: %d lines, want %d", file, n, len(want))
		}
		for _, l := range want {
			if !strings.Contains(s, ">"+l+"<") {
				t.Errorf("%s: no legend %q", file, l)
			}
		}
		if strings.Contains(s, "flow-json") {
			t.Errorf("%s draws flow-json", file)
		}
		checkLogAxis(t, file, s)
		if !strings.Contains(md, "(bench/"+file+")") {
			t.Errorf("BENCHMARKS.md does not show %s", file)
		}
	}

	// Two link profiles: a chart each.
	series, charts = t.TempDir(), t.TempDir()
	writeStallSeries(t, series, "BenchmarkShapedLink/wan/flow-cbor", "BenchmarkShapedLink/wan/sdk-http", "BenchmarkShapedLink/lte/flow-cbor")
	rep = parse(strings.NewReader("BenchmarkShapedLink/wan/flow-cbor-2 1 1 ns/op 1 busy-p99-µs\nBenchmarkShapedLink/wan/sdk-http-2 1 1 ns/op 1 busy-p99-µs\nBenchmarkShapedLink/lte/flow-cbor-2 1 1 ns/op 1 busy-p99-µs\n"))
	if _, drawn := rep.markdown(nil, readSeries(series), series, charts); len(drawn) != 2 || drawn[0].file != "stall-shaped.svg" || drawn[1].file != "stall-shaped-lte.svg" {
		t.Fatalf("profiles drew %v, want stall-shaped.svg (wan) and stall-shaped-lte.svg", drawn)
	}
	b, _ := os.ReadFile(filepath.Join(charts, "stall-shaped.svg"))
	if s := string(b); strings.Count(s, "<polyline") != 2 || !strings.Contains(s, "(wan)") {
		t.Errorf("stall-shaped.svg for wan: %.300s", s)
	}
}

// TestReadmeSummary: -readme rewrites the block between the summary
// markers, and only it, from the run: a row each for MCP-Flow, Streamable
// HTTP and stdio with the large result's MB/s (largest size) and the busy
// ping p99, and the stall chart linked from where the README is; again
// with the same run, it is unchanged; a README without the markers is an
// error.
func TestReadmeSummary(t *testing.T) {
	root := t.TempDir()
	chartDir := filepath.Join(root, "docs", "bench")
	if err := os.MkdirAll(chartDir, 0o755); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(root, "README.md")
	doc := "# x\n\n## Performance\n\nbefore\n\n" + summaryStart + "\nstale\n" + summaryEnd + "\n\nafter\n"
	if err := os.WriteFile(readme, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := parse(strings.NewReader(stallOut))
	drawn := []drawnStall{{"stall.svg", "t"}, {"stall-shaped.svg", "t"}, {"stall-shaped-lossy.svg", "t"}}
	if err := rep.writeReadme(readme, chartDir, drawn); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(readme)
	got := string(b)
	for _, want := range []string{
		"# x\n\n## Performance\n\nbefore\n\n" + summaryStart + "\n", summaryEnd + "\n\nafter\n",
		"| MCP-Flow (CBOR, execution stream) | 431 (256 MiB) | 8.9 ms (256 MiB) |\n",
		"| Streamable HTTP (go-sdk / TS SDK) | 13.2 (256 MiB) / 27.5 (256 MiB) | 301 ms (64 MiB) / 1232 ms (64 MiB) |\n",
		"| stdio (go-sdk / TS SDK) | 11.8 (256 MiB) / 9.5 (256 MiB) | 2447 ms (64 MiB) / 2500 ms (64 MiB) |\n",
		"](docs/bench/stall.svg)", "](docs/bench/stall-shaped.svg), and with 1 % loss: [stall-shaped-lossy.svg](docs/bench/stall-shaped-lossy.svg).", "[BENCHMARKS.md](docs/BENCHMARKS.md)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("README lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "stale") || strings.Count(got, summaryStart) != 1 {
		t.Errorf("the old block is still there:\n%s", got)
	}
	if err := rep.writeReadme(readme, chartDir, drawn); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(readme); string(b) != got {
		t.Errorf("a second rewrite changed the README:\n%s", b)
	}
	if err := os.WriteFile(readme, []byte("# no block\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rep.writeReadme(readme, chartDir, drawn); err == nil {
		t.Error("a README without the markers was accepted")
	}
}

// TestSessionsBare: the idle-session section gives the bare
// webtransport-go session with a stream (the judged equivalent) and
// without, and MCP-Flow's own share both ways.
func TestSessionsBare(t *testing.T) {
	var md strings.Builder
	parse(strings.NewReader(sample)).sessionsSection(&md, t.TempDir())
	for _, want := range []string{"each with one bidirectional stream", ": 62.5 KiB of heap in use per session", "the same sessions took 60.0 KiB", "is 8.0 KiB", "attributes 2.1 KiB"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("no %q in:\n%s", want, md.String())
		}
	}
}
