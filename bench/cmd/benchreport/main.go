// Command benchreport reads `go test -bench` output (benchstat's format) of
// ./bench and ./codec, and the latency series and heap profile summary the
// benchmarks wrote (MCP_FLOW_BENCH_SERIES), prints every goal with its
// measured ratio, and writes docs/BENCHMARKS.md with SVG charts in
// docs/bench/. Every sentence of the document that states a figure takes it
// from the run.
//
//	go run ./bench/cmd/benchreport -in bench.out -series bench.series -out docs
package main

import (
	"bufio"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// result is one benchmark line: its metrics by unit.
type result struct {
	name    string
	metrics map[string]float64
}

type report struct {
	results map[string]*result
	order   []string
	header  map[string]string // goos, goarch, cpu, …
}

var lineRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

func parse(r io.Reader) *report {
	rep := &report{results: map[string]*result{}, header: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, "Benchmark") && !strings.Contains(k, " ") {
			rep.header[k] = v
			continue
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		res := &result{name: m[1], metrics: map[string]float64{}}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err == nil {
				res.metrics[f[i+1]] = v
			}
		}
		if _, seen := rep.results[res.name]; !seen {
			rep.order = append(rep.order, res.name)
		}
		rep.results[res.name] = res // the last run of a name wins
	}
	return rep
}

func (r *report) get(name, unit string) (float64, bool) {
	res, ok := r.results[name]
	if !ok {
		return 0, false
	}
	v, ok := res.metrics[unit]
	return v, ok
}

// goal is one of the goals: a ratio of two measurements, or (den
// empty) one measurement against a bound. A name ending in "*" stands for
// the best (largest) of the results it prefixes: a baseline at its best
// write size. A ceiling is a bound the goal cannot pass by construction: it
// is reported, never listed as missed.
type goal struct {
	what      string
	num, den  [2]string // benchmark, unit
	cmp       string    // ">=" or "<="
	threshold float64
	scale     float64 // the value is multiplied by it (0: 1)
	ceiling   bool
}

const (
	hol      = "BenchmarkHeadOfLine/flow-cbor"
	holProc  = "BenchmarkHeadOfLineProcesses/flow-cbor"
	holProcW = "BenchmarkHeadOfLineProcesses/flow-cbor-window-64k"
	shaped   = "BenchmarkShapedLink/flow-cbor"
	shapedW  = "BenchmarkShapedLink/flow-cbor-window-*"
	sessions = "BenchmarkSessions"
	// streamVsBare compares the execution stream with the bare stream.
	streamVsBare = "BenchmarkStreamVsBare"
	// echoInterleaved compares the encodings in turns, on one machine load.
	echoInterleaved = "BenchmarkEcho/flow-interleaved/c=16"
)

var goals = []goal{
	{what: "execution stream vs bare webtransport-go stream at its best write size (64 MiB, medians of interleaved rounds)", num: [2]string{streamVsBare, "flow/bare"}, cmp: ">=", threshold: 0.9},
	{what: "large result vs go-sdk stdio, base64 (256 MiB, MB/s)", num: [2]string{"BenchmarkLarge/flow-cbor/256MiB", "MB/s"}, den: [2]string{"BenchmarkLarge/sdk-stdio/256MiB", "MB/s"}, cmp: ">=", threshold: 10},
	{what: "large result vs go-sdk Streamable HTTP, base64 (256 MiB, MB/s)", num: [2]string{"BenchmarkLarge/flow-cbor/256MiB", "MB/s"}, den: [2]string{"BenchmarkLarge/sdk-http/256MiB", "MB/s"}, cmp: ">=", threshold: 10},
	{what: "peak RSS, 256 MiB vs 16 MiB result, MCP-Flow (bounded: ≈1)", num: [2]string{"BenchmarkLarge/flow-cbor/256MiB", "peak-RSS-MiB"}, den: [2]string{"BenchmarkLarge/flow-cbor/16MiB", "peak-RSS-MiB"}, cmp: "<=", threshold: 1.5},
	{what: "open-loop ping p99 during a 256 MiB result vs idle p99, separate processes, one core each", num: [2]string{holProc, "busy-p99-µs"}, den: [2]string{holProc, "idle-p99-µs"}, cmp: "<=", threshold: 3},
	{what: "open-loop ping max during a 256 MiB result, separate processes, one core each (ms)", num: [2]string{holProc, "busy-max-µs"}, cmp: "<=", threshold: 10, scale: 1e-3},
	{what: "the same two with a 64 KiB stream receive window: p99 busy/idle", num: [2]string{holProcW, "busy-p99-µs"}, den: [2]string{holProcW, "idle-p99-µs"}, cmp: "<=", threshold: 3},
	{what: "the same with a 64 KiB stream receive window: max (ms)", num: [2]string{holProcW, "busy-max-µs"}, cmp: "<=", threshold: 10, scale: 1e-3},
	{what: "open-loop ping p99 during a 256 MiB result vs idle p99, one process", num: [2]string{hol, "busy-p99-µs"}, den: [2]string{hol, "idle-p99-µs"}, cmp: "<=", threshold: 3},
	{what: "open-loop ping max during a 256 MiB result, one process (ms)", num: [2]string{hol, "busy-max-µs"}, cmp: "<=", threshold: 10, scale: 1e-3},
	{what: "shaped link: ping p99 during a 64 MiB result vs idle p99, MCP-Flow", num: [2]string{shaped, "busy-p99-µs"}, den: [2]string{shaped, "idle-p99-µs"}, cmp: "<=", threshold: 2},
	{what: "shaped link: throughput vs link rate, MCP-Flow", num: [2]string{shaped, "link-%"}, cmp: ">=", threshold: 0.9, scale: 0.01},
	{what: "shaped link, stream receive window 2 BDP: ping p99 busy/idle", num: [2]string{shapedW, "busy-p99-µs"}, den: [2]string{shapedW, "idle-p99-µs"}, cmp: "<=", threshold: 2},
	{what: "shaped link, stream receive window 2 BDP: throughput vs link rate", num: [2]string{shapedW, "link-%"}, cmp: ">=", threshold: 0.9, scale: 0.01},
	{what: "idle sessions held by the server process vs asked (10,000 in full mode)", num: [2]string{sessions, "sessions"}, den: [2]string{sessions, "sessions-asked"}, cmp: ">=", threshold: 1},
	{what: "heap per idle session, server process alone (KiB)", num: [2]string{sessions, "KiB-heap/session"}, cmp: "<=", threshold: 64},
	{what: "burst of 1,000 concurrent dials + initialize: dials refused or failed", num: [2]string{sessions, "burst-refused"}, cmp: "<=", threshold: 0},
	{what: "echo calls/s at concurrency 16 vs go-sdk stdio", num: [2]string{"BenchmarkEcho/flow-cbor/c=16", "calls/s"}, den: [2]string{"BenchmarkEcho/sdk-stdio/c=16", "calls/s"}, cmp: ">=", threshold: 2},
	{what: "echo calls/s at concurrency 16 vs go-sdk Streamable HTTP", num: [2]string{"BenchmarkEcho/flow-cbor/c=16", "calls/s"}, den: [2]string{"BenchmarkEcho/sdk-http/c=16", "calls/s"}, cmp: ">=", threshold: 2},
	{what: "echo calls/s at concurrency 16, cbor vs json (medians of interleaved rounds)", num: [2]string{echoInterleaved, "cbor/json"}, cmp: ">=", threshold: 1},
	{what: "echo calls/s at concurrency 16, protobuf vs json (medians of interleaved rounds)", num: [2]string{echoInterleaved, "protobuf/json"}, cmp: ">=", threshold: 0.9},
	{what: "CBOR encode of the 50-tool list (µs of the process's CPU time: a loaded machine adds its waits for a core to ns/op)", num: [2]string{"BenchmarkEncode/tools_list_result_50/cbor", "cpu-ns/op"}, cmp: "<=", threshold: 50, scale: 1e-3},
	{what: "idle ping p50 vs bare webtransport-go ping-pong (median of interleaved rounds)", num: [2]string{"BenchmarkPing/flow-cbor-vs-bare-webtransport", "flow/bare"}, cmp: "<=", threshold: 1.25},
	{what: "CBOR vs JSON size, tools/call result with a 1 MiB image (a ceiling: base64 makes JSON 4/3 of the bytes, so 0.75 is the limit for an all-payload message)", num: [2]string{"BenchmarkDecode/tools_call_result_image_1MiB/cbor", "bytes/msg"}, den: [2]string{"BenchmarkDecode/tools_call_result_image_1MiB/json", "bytes/msg"}, cmp: "<=", threshold: 0.75, ceiling: true},
	{what: "CBOR vs JSON decode time, tools/call result with a 1 MiB image (the process's CPU time per decode, the collector's included: samples taken seconds apart on a loaded machine compare its load in ns/op)", num: [2]string{"BenchmarkDecode/tools_call_result_image_1MiB/cbor", "cpu-ns/op"}, den: [2]string{"BenchmarkDecode/tools_call_result_image_1MiB/json", "cpu-ns/op"}, cmp: "<=", threshold: 1},
}

type ratio struct {
	goal
	value float64
	ok    bool
	found bool
	base  string // the result a "*" baseline resolved to
}

// best returns the largest value of unit among the results whose name
// starts with prefix, and that result's name.
func (r *report) best(prefix, unit string) (float64, string, bool) {
	var v float64
	var name string
	for _, n := range r.order {
		if strings.HasPrefix(n, prefix) {
			if x, ok := r.results[n].metrics[unit]; ok && (name == "" || x > v) {
				v, name = x, n
			}
		}
	}
	return v, name, name != ""
}

// lookup resolves one side of a goal.
func (r *report) lookup(side [2]string) (float64, string, bool) {
	if p, ok := strings.CutSuffix(side[0], "*"); ok {
		return r.best(p, side[1])
	}
	v, ok := r.get(side[0], side[1])
	return v, side[0], ok
}

func (r *report) ratios() []ratio {
	var out []ratio
	for _, g := range goals {
		n, _, ok := r.lookup(g.num)
		rt := ratio{goal: g, found: ok}
		if g.den[0] != "" {
			d, base, ok2 := r.lookup(g.den)
			rt.found = ok && ok2 && d != 0
			rt.base = base
			if rt.found {
				n /= d
			}
		}
		if g.scale != 0 {
			n *= g.scale
		}
		if rt.found {
			rt.value = n
			rt.ok = (g.cmp == ">=" && rt.value >= g.threshold) || (g.cmp == "<=" && rt.value <= g.threshold)
		}
		out = append(out, rt)
	}
	return out
}

// verdict is the table's word for r.
func (r ratio) verdict() string {
	switch {
	case !r.found:
		return "not measured"
	case r.ceiling:
		return "ceiling"
	case r.ok:
		return "met"
	}
	return "MISSED"
}

// svgBars draws a horizontal bar chart.
func svgBars(title, unit string, labels []string, values []float64) string {
	const w, left, bar, gap = 720, 230, 18, 6
	h := 40 + len(labels)*(bar+gap) + 10
	maxV := slices.Max(values)
	if maxV <= 0 {
		maxV = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">%s (%s)</text>`+"\n", html.EscapeString(title), html.EscapeString(unit))
	for i, l := range labels {
		y := 34 + i*(bar+gap)
		bw := int(float64(w-left-90) * values[i] / maxV)
		color := "#8da0cb"
		if strings.HasPrefix(l, "flow") {
			color = "#66c2a5"
		} else if strings.HasPrefix(l, "bare") {
			color = "#bbbbbb"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, left-6, y+13, html.EscapeString(l))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`, left, y, max(bw, 1), bar, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", left+bw+4, y+13, fmtNum(values[i]))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func fmtNum(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// group collects the results under prefix, labelled by the rest of the name.
func (r *report) group(prefix, unit string) (labels []string, values []float64) {
	for _, n := range r.order {
		if rest, ok := strings.CutPrefix(n, prefix); ok {
			if v, ok := r.results[n].metrics[unit]; ok {
				labels = append(labels, rest)
				values = append(values, v)
			}
		}
	}
	return labels, values
}

type chart struct {
	file, title, prefix, unit string
}

var charts = []chart{
	{"ping-p50.svg", "Idle ping, p50", "BenchmarkPing/", "p50-µs"},
	{"echo-c16.svg", "Echo tools/call, concurrency 16", "BenchmarkEcho/", "calls/s"},
	{"large.svg", "Large result, end to end (16 and 256 MiB; bare stacks at each write size)", "BenchmarkLarge/", "MB/s"},
	{"streams.svg", "Parallel streams, aggregate", "BenchmarkParallelStreams/", "MB/s"},
	{"setup.svg", "Connect + initialize, p50", "BenchmarkSetup/", "p50-µs"},
}

// A latency section: an open-loop benchmark's table, its chart of
// latency over the transfer's time, and its account.
type latencySection struct {
	title, bench, file, intro string
}

var latencySections = []latencySection{
	{"Head-of-line blocking, open loop, client and server in separate processes", "BenchmarkHeadOfLineProcesses", "hol-processes.svg",
		"A ping every 2 ms on the control stream, each timed from its scheduled send time whatever the answers (open loop: a stall counts every ping it holds up), first idle for 500 pings, then while a 256 MiB result streams on the same session. The server and the client are two processes"},
	{"Head-of-line blocking, open loop, one process", "BenchmarkHeadOfLine", "hol.svg",
		"The same open loop with client and server in the benchmark's process (the go-sdk stdio server is a subprocess, as it must be), for every peer: MCP-Flow in each encoding and with 64 and 256 KiB stream receive windows, the go-sdk over stdio and over Streamable HTTP (its HTTP client bounded to 64 connections per host: HTTP/1.1 needs a connection per request outstanding; the go-sdk's result is smaller in short mode, see the result column: base64 through it is the slowest part of the run)."},
	{"Shaped link", "BenchmarkShapedLink", "shaped.svg",
		"Through a relay that models a bottleneck in each direction (internal/lossrelay: a serializer at the link rate behind a drop-tail queue of one bandwidth-delay product, then half the round trip of delay; the UDP relay for MCP-Flow, the TCP relay, a split connection with the same model, for every connection of the go-sdk's Streamable HTTP client), the open loop during a large result (the result column gives its size)."},
}

func ms(v float64) string { return fmtNum(v/1e3) + " ms" }

// latencyTable writes the open-loop figures of every result under bench.
func (r *report) latencyTable(md *strings.Builder, bench string) {
	md.WriteString("| peer | result | idle p50 | idle p99 | idle max | busy p50 | busy p99 | busy p99.9 | busy max | longest stall | p99 busy/idle | result MB/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range r.order {
		rest, ok := strings.CutPrefix(n, bench+"/")
		if !ok {
			continue
		}
		m := r.results[n].metrics
		if _, ok := m["busy-p99-µs"]; !ok {
			continue
		}
		fmt.Fprintf(md, "| %s | %s MiB | %s | %s | %s | %s | %s | %s | %s | %s ms | %s | %s |\n", rest, fmtNum(m["result-MiB"]), ms(m["idle-p50-µs"]), ms(m["idle-p99-µs"]), ms(m["idle-max-µs"]),
			ms(m["busy-p50-µs"]), ms(m["busy-p99-µs"]), ms(m["busy-p99.9-µs"]), ms(m["busy-max-µs"]), fmtNum(m["stall-ms"]), fmtNum(m["busy-p99-µs"]/m["idle-p99-µs"]), fmtNum(m["transfer-MB/s"]))
	}
	md.WriteString("\n")
}

// shapedAccount writes the packet-level account of the shaped link from
// the relay's counters, for every peer.
func (r *report) shapedAccount(md *strings.Builder) {
	md.WriteString("What the bottleneck did during each transfer (the relay's counters, in the result's direction; lateness is how long after its due time the relay sent data, which the model does not add: the relay's own scheduling):\n\n| peer | result | result vs link rate | datagrams dropped by the full queue | mean wait in the queue | longest wait in the queue | bytes carried beyond the result | relay lateness, mean / max | busy p99 |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range r.order {
		rest, ok := strings.CutPrefix(n, "BenchmarkShapedLink/")
		if !ok {
			continue
		}
		m := r.results[n].metrics
		fmt.Fprintf(md, "| %s | %s MiB | %s %% | %s | %s ms | %s ms | %s %% | %s / %s ms | %s |\n", rest, fmtNum(m["result-MiB"]), fmtNum(m["link-%"]), fmtNum(m["queue-drops"]), fmtNum(m["queue-mean-ms"]), fmtNum(m["queue-max-ms"]), fmtNum(m["overhead-%"]), fmtNum(m["relay-late-mean-ms"]), fmtNum(m["relay-late-max-ms"]), ms(m["busy-p99-µs"]))
	}
	md.WriteString("\n")
	for _, n := range r.order {
		rest, ok := strings.CutPrefix(n, "BenchmarkShapedLink/flow")
		if !ok {
			continue
		}
		m := r.results[n].metrics
		fmt.Fprintf(md, "- flow%s: a ping's answer waits in the bottleneck queue behind the result's packets for at most the queue's longest wait, %s ms (%s ms on average); its busy p99 is %s against an idle p99 of %s.%s%s\n",
			rest, fmtNum(m["queue-max-ms"]), fmtNum(m["queue-mean-ms"]), ms(m["busy-p99-µs"]), ms(m["idle-p99-µs"]), slowPath(m), shapedCause(m))
	}
	md.WriteString("\n")
}

// point is one ping of a series: when it was scheduled, how long it took.
type point struct{ at, lat float64 } // ms

// readSeries reads the series files (benchmark name with "/" as "__").
func readSeries(dir string) map[string][]point {
	out := map[string][]point{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.series"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		name := strings.ReplaceAll(strings.TrimSuffix(filepath.Base(f), ".series"), "__", "/")
		var pts []point
		for _, line := range strings.Split(string(b), "\n") {
			var p point
			if _, err := fmt.Sscanf(line, "%g %g", &p.at, &p.lat); err == nil {
				pts = append(pts, p)
			}
		}
		out[name] = pts
	}
	return out
}

var palette = []string{"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"}

// svgSeries draws latency (log scale) over the time each ping was
// scheduled, one line per peer.
func svgSeries(title string, labels []string, series [][]point) string {
	const w, h, left, top, right, bottom = 760, 380, 60, 30, 190, 40
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	var maxT, maxL, minL float64 = 1, 1, 1e9
	for _, s := range series {
		for _, p := range s {
			maxT, maxL, minL = max(maxT, p.at), max(maxL, p.lat), min(minL, max(p.lat, 0.01))
		}
	}
	lo, hi := math.Floor(math.Log10(minL)), math.Ceil(math.Log10(maxL))
	if hi <= lo {
		hi = lo + 1
	}
	y := func(l float64) float64 { return float64(top) + ph*(1-(math.Log10(max(l, 0.01))-lo)/(hi-lo)) }
	x := func(t float64) float64 { return float64(left) + pw*t/maxT }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for e := lo; e <= hi; e++ {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s ms</text>`+"\n", left, w-right, y(math.Pow(10, e)), y(math.Pow(10, e)), left-4, y(math.Pow(10, e))+4, fmtNum(math.Pow(10, e)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">scheduled send time since the result was asked for (ms, up to %s)</text>`+"\n", left+int(pw/2), h-8, fmtNum(maxT))
	for i, s := range series {
		c := palette[i%len(palette)]
		var pts strings.Builder
		for _, p := range s {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(p.at), y(p.lat))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1" points="%s"/>`+"\n", c, pts.String())
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", w-right+10, top+i*18, c, w-right+26, top+i*18+11, html.EscapeString(labels[i]))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchreport:", err)
	os.Exit(1)
}

func main() {
	in := flag.String("in", "bench.out", "go test -bench output")
	out := flag.String("out", "docs", "directory for BENCHMARKS.md and bench/*.svg")
	seriesDir := flag.String("series", "bench.series", "the latency series and heap profile the benchmarks wrote (MCP_FLOW_BENCH_SERIES)")
	flag.Parse()
	f, err := os.Open(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(2)
	}
	rep := parse(f)
	f.Close()
	if len(rep.results) == 0 {
		fmt.Fprintln(os.Stderr, "benchreport: no benchmark results in", *in)
		os.Exit(1)
	}
	rs := rep.ratios()
	fmt.Println("Goals (measured in this run):")
	for _, r := range rs {
		fmt.Println("  " + r.line())
	}
	if err := os.MkdirAll(filepath.Join(*out, "bench"), 0o755); err != nil {
		fail(err)
	}
	md := rep.markdown(rs, readSeries(*seriesDir), *seriesDir, filepath.Join(*out, "bench"))
	if err := os.WriteFile(filepath.Join(*out, "BENCHMARKS.md"), []byte(md), 0o644); err != nil {
		fail(err)
	}
	fmt.Println("wrote", filepath.Join(*out, "BENCHMARKS.md"))
}

// markdown writes the charts into chartDir and returns BENCHMARKS.md.
// Every figure in it comes from the run.
func (rep *report) markdown(rs []ratio, series map[string][]point, seriesDir, chartDir string) string {
	var md strings.Builder
	md.WriteString("# Benchmarks\n\nGenerated by `make bench` (`bench/cmd/benchreport`) from one run of `go test -bench` over `./bench` and `./codec`; every figure below was measured in that run, on the same machine. The machine is shared: other work ran beside the benchmarks, and the load average is given where a benchmark measured it.\n\n")
	fmt.Fprintf(&md, "- Date: %s\n- Machine: %s, %s/%s, %d cores\n- Go: %s\n- Versions: %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		strings.TrimSpace(rep.header["cpu"]), rep.header["goos"], rep.header["goarch"], runtime.NumCPU(), runtime.Version(), versions())
	if v, ok := rep.get(sessions, "sessions-asked"); ok {
		mode := "short (`make bench`; `make bench BENCH_FULL=1` for full mode: 10,000 idle sessions, 1 GiB results)"
		if v >= 10000 {
			mode = "full"
		}
		fmt.Fprintf(&md, "- Mode: %s; this run asked for %s idle sessions\n", mode, fmtNum(v))
	}
	if v, name, ok := rep.best("Benchmark", "loadavg"); ok {
		fmt.Fprintf(&md, "- Highest 1-minute load average a benchmark saw: %s on %d cores (%s)\n", fmtNum(v), runtime.NumCPU(), strings.TrimPrefix(name, "Benchmark"))
	}
	md.WriteString("\n## Goals\n\n| goal | measured | target | verdict |\n|---|---|---|---|\n")
	for _, r := range rs {
		if !r.found {
			fmt.Fprintf(&md, "| %s | not measured | %s %g | — |\n", r.what, r.cmp, r.threshold)
			continue
		}
		v := r.verdict()
		if v == "MISSED" {
			v = "**missed**"
		}
		what := r.what
		if strings.HasSuffix(r.den[0], "*") {
			what += " (best: " + strings.TrimPrefix(r.base, "Benchmark") + ")"
		}
		fmt.Fprintf(&md, "| %s | %.4g | %s %g | %s |\n", what, r.value, r.cmp, r.threshold, v)
	}
	md.WriteString("\n")
	rep.missed(&md, rs, seriesDir)
	for _, sec := range latencySections {
		var labels []string
		var lines [][]point
		for _, n := range rep.order {
			if rest, ok := strings.CutPrefix(n, sec.bench+"/"); ok && series[n] != nil {
				labels, lines = append(labels, rest), append(lines, series[n])
			}
		}
		fmt.Fprintf(&md, "## %s\n\n%s", sec.title, sec.intro)
		if sec.bench == "BenchmarkHeadOfLineProcesses" {
			if v, ok := rep.get(sec.bench+"/flow-cbor", "pinned"); ok && v == 1 {
				md.WriteString(", each pinned to one core of its own (`taskset`).")
			} else {
				md.WriteString(", not pinned (no `taskset` here).")
			}
		}
		if sec.bench == "BenchmarkShapedLink" {
			if m, ok := rep.results[sec.bench+"/flow-cbor"]; ok {
				fmt.Fprintf(&md, " Link: %s Mbit/s, %s ms round trip.", fmtNum(m.metrics["link-Mbit/s"]), fmtNum(m.metrics["rtt-ms"]))
			}
		}
		md.WriteString("\n\n")
		rep.latencyTable(&md, sec.bench)
		if len(lines) > 0 {
			if err := os.WriteFile(filepath.Join(chartDir, sec.file), []byte(svgSeries(sec.title+": ping latency during the transfer", labels, lines)), 0o644); err != nil {
				fail(err)
			}
			fmt.Fprintf(&md, "![%s](bench/%s)\n\n", sec.title, sec.file)
		}
		if sec.bench == "BenchmarkShapedLink" {
			rep.shapedAccount(&md)
		}
	}
	if m, ok := rep.results[streamVsBare]; ok {
		fmt.Fprintf(&md, "## Execution stream vs the bare stream\n\nBoth ends of both in this process, 64 MiB at a time. %s\n\n", streamText(m.metrics, rep.bareWrites(m.metrics)))
	}
	rep.sessionsSection(&md, seriesDir)
	for _, c := range charts {
		labels, values := rep.group(c.prefix, c.unit)
		if len(labels) == 0 {
			continue
		}
		if err := os.WriteFile(filepath.Join(chartDir, c.file), []byte(svgBars(c.title, c.unit, labels, values)), 0o644); err != nil {
			fail(err)
		}
		fmt.Fprintf(&md, "## %s\n\n![%s](bench/%s)\n\n", c.title, c.title, c.file)
	}
	md.WriteString("## All results\n\n| benchmark | metrics |\n|---|---|\n")
	for _, n := range rep.order {
		res := rep.results[n]
		units := make([]string, 0, len(res.metrics))
		for u := range res.metrics {
			units = append(units, u)
		}
		sort.Strings(units)
		var parts []string
		for _, u := range units {
			parts = append(parts, fmtNum(res.metrics[u])+" "+u)
		}
		fmt.Fprintf(&md, "| %s | %s |\n", strings.TrimPrefix(n, "Benchmark"), strings.Join(parts, ", "))
	}
	return md.String()
}

// sessionsSection writes the idle-session figures and where the heap goes
// (the server's heap profile, top functions by in-use space).
func (rep *report) sessionsSection(md *strings.Builder, seriesDir string) {
	m, ok := rep.results[sessions]
	if !ok {
		return
	}
	v := m.metrics
	fmt.Fprintf(md, "## Idle sessions and a burst of dials\n\nA server process (the bench binary in its server role: `flow.Server` with mcp-flow-server's tools, on either core) first took a burst of 1,000 concurrent dials + initialize (the client does not retry a refusal here; each dial may take up to %s s): %s failed; the burst took %s s, %s sessions established per second, with %s ms of the server's CPU per dial. A second server process, so that what the burst left behind does not count, then held %s idle sessions (asked: %s; %s failed to dial), dialled %s a second, 32 at a time, all over one UDP socket. Measured after GC in that server process alone, per session held: %s KiB of heap in use (HeapInuse), of which %s KiB are live objects (HeapAlloc); %s goroutines, whose stacks take another %s KiB (not heap).\n\n",
		fmtNum(v["dial-timeout-s"]), fmtNum(v["burst-refused"]), fmtNum(v["burst-s"]), fmtNum(v["burst-sessions/s"]), fmtNum(v["burst-server-cpu-ms/dial"]), fmtNum(v["sessions"]), fmtNum(v["sessions-asked"]), fmtNum(v["idle-failed"]), fmtNum(v["idle-dials/s"]),
		fmtNum(v["KiB-heap/session"]), fmtNum(v["KiB-live/session"]), fmtNum(v["goroutines/session"]), fmtNum(v["KiB-stacks/session"]))
	if b, err := os.ReadFile(filepath.Join(seriesDir, "BenchmarkSessions.owners")); err == nil {
		md.WriteString("Who holds the live heap (the server's heap profile after GC, in-use space, by the code nearest each allocation that belongs to a library, KiB per session held; the profile samples allocations, so these are estimates):\n\n| KiB per session | owner |\n|---|---|\n")
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if k, o, ok := strings.Cut(line, " "); ok {
				fmt.Fprintf(md, "| %s | %s |\n", k, o)
			}
		}
		md.WriteString("\n")
	}
	if all, rows, ok := spanRows(seriesDir); ok {
		fmt.Fprintf(md, "Where the free space inside spans is (fragmentation: the server's heap dump after GC, read span by span; its spans, the whole process's heap in use divided by the sessions held, add up to %s KiB per session, of which %s KiB live and %s KiB free), by object size, the sizes with the most free space first; allocated is what the process allocated of that size per session held since it started (its heap profile, sampled):\n\n| object size | KiB free per session | KiB of spans | KiB live | KiB allocated |\n|---|---|---|---|---|\n",
			fmtNum(all.spans), fmtNum(all.live), fmtNum(all.free))
		for _, r := range rows {
			fmt.Fprintf(md, "| %d B | %s | %s | %s | %s |\n", r.size, fmtNum(r.free), fmtNum(r.spans), fmtNum(r.live), fmtNum(r.allocated))
		}
		md.WriteString("\n")
	}
	b, err := os.ReadFile(filepath.Join(seriesDir, "BenchmarkSessions.heap"))
	if err != nil {
		return
	}
	md.WriteString("Where the server's heap goes (its heap profile after GC, in-use space, flat, per session held):\n\n| KiB per session | allocated in |\n|---|---|\n")
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, fn, ok := strings.Cut(line, " "); ok {
			fmt.Fprintf(md, "| %s | `%s` |\n", k, fn)
		}
	}
	md.WriteString("\n")
}

// bareWrites lists BenchmarkStreamVsBare's bare-stream medians by write
// size, the best one marked.
func (rep *report) bareWrites(m map[string]float64) string {
	var parts []string
	for _, n := range rep.units(streamVsBare) {
		if w, ok := strings.CutPrefix(n, "bare-write="); ok {
			w = strings.TrimSuffix(w, "-MB/s")
			p := w + " writes " + fmtNum(m[n])
			if w == strconv.Itoa(int(m["bare-best-write-KiB"]))+"k" {
				p += " (best)"
			}
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}

// streamText states BenchmarkStreamVsBare's figures.
func streamText(m map[string]float64, writes string) string {
	return fmt.Sprintf("A sweep of the bare webtransport-go stream, one fetch at each write size (MB/s): %s; then %s pairs, one fetch on an execution stream and one from the bare stream at %s KiB writes, back to back: medians %s MB/s against %s MB/s, and a median ratio of %s. CPU per GiB moved (both ends, this process): the execution stream %s s, the bare stream %s s.",
		writes, strconv.Itoa(int(m["rounds"])), strconv.Itoa(int(m["bare-best-write-KiB"])), fmtNum(m["flow-MB/s"]), fmtNum(m["bare-best-MB/s"]), fmtNum(m["flow/bare"]), fmtNum(m["flow-cpu-s/GiB"]), fmtNum(m["bare-cpu-s/GiB"]))
}

// units returns the units of a result, sorted.
func (rep *report) units(name string) []string {
	res, ok := rep.results[name]
	if !ok {
		return nil
	}
	var out []string
	for u := range res.metrics {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(out[i], "-MB/s"), "bare-write="), "k"))
		b, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(out[j], "-MB/s"), "bare-write="), "k"))
		if a != b {
			return a < b
		}
		return out[i] < out[j]
	})
	return out
}

// slowPath says where the slowest 1 % of a shaped run's busy pings spent
// their time, from the relay's record of each datagram (slowPathAccount in
// the bench package).
func slowPath(m map[string]float64) string {
	if _, ok := m["slow-lat-ms"]; !ok {
		return ""
	}
	return fmt.Sprintf(" The slowest 1 %% of the busy pings took %s ms on average: the %s ms round trip; among the datagrams the relay sent during each of them, the longest wait in the bottleneck queue (%s ms on average over those pings), the relay's largest lateness in the result's direction (%s ms: datagrams sent after their due time, because the relay%s did not run; it read datagrams up to %s ms after the kernel received them) and in the other direction (queue and lateness, %s ms); and at least %s ms at the endpoints (the rest; a stall of the relay's process that delays both directions counts twice above). The full queue dropped %s of the result's direction's datagrams during each of those pings on average, and %s %% of them saw a drop (an answer lost there waits for QUIC's loss recovery, which the rest includes).",
		fmtNum(m["slow-lat-ms"]), fmtNum(m["rtt-ms"]), fmtNum(m["slow-down-queue-ms"]), fmtNum(m["slow-down-late-ms"]), relayWhere(m), fmtNum(m["relay-read-late-max-ms"]), fmtNum(m["slow-up-excess-ms"]), fmtNum(m["slow-endpoint-ms"]),
		fmtNum(m["slow-down-drops"]), fmtNum(m["slow-with-drops-%"]))
}

// relayWhere says where the relay ran, for slowPath: in a process of its
// own when the run reports its CPU (relay-cpu), else in the benchmark's.
func relayWhere(m map[string]float64) string {
	if _, ok := m["relay-cpu"]; ok {
		return " (a process of its own, sharing the machine's cores with the benchmark's)"
	}
	return ", in the benchmark's process,"
}

// holAccount says, from a head-of-line run (in two processes, or both
// ends in one), what the slowest 1 % of its busy pings waited for: the
// client's UDP receive queue and the scheduler (bench/probe_test.go).
func holAccount(m map[string]float64) string {
	if _, ok := m["rxq-slow-KiB"]; !ok {
		return ""
	}
	return holQueues(m) + goRunnable(m)
}

// goRunnable says how long the measuring process's goroutines waited for
// Go's scheduler during the transfer (runtime/metrics).
func goRunnable(m map[string]float64) string {
	if _, ok := m["go-runnable-p99-µs"]; !ok {
		return ""
	}
	return fmt.Sprintf(" Within the measuring process (GOMAXPROCS %d), goroutines made runnable during the transfer waited for a P up to %s (p99 %s; at least %s ms per second in all; runtime/metrics /sched/latencies): a P held by another goroutine, or by a thread the kernel was not running.",
		int(m["gomaxprocs"]), ms(m["go-runnable-max-µs"]), ms(m["go-runnable-p99-µs"]), fmtNum(m["go-runnable-ms/s"]))
}

// gomaxprocsText says what the head-of-line run with GOMAXPROCS=2 in
// both processes (g; each still pinned to one core) measured beside the
// default run m, whose processes run with GOMAXPROCS 1 when pinned.
func gomaxprocsText(m, g map[string]float64) string {
	s := fmt.Sprintf(" In the same run, with GOMAXPROCS=2 in both processes (each still on its one core: the kernel time-slices two threads running Go code, so a runnable goroutine need not wait for the one running to yield), busy p50 %s, p99 %s, max %s against an idle p99 of %s (busy/idle %s), at %s MB/s; the client's goroutines waited for a P p99 %s and max %s (%s ms per second), against p99 %s and max %s (%s ms per second) with GOMAXPROCS %d.",
		ms(g["busy-p50-µs"]), ms(g["busy-p99-µs"]), ms(g["busy-max-µs"]), ms(g["idle-p99-µs"]), fmtNum(g["busy-p99-µs"]/g["idle-p99-µs"]), fmtNum(g["transfer-MB/s"]),
		ms(g["go-runnable-p99-µs"]), ms(g["go-runnable-max-µs"]), fmtNum(g["go-runnable-ms/s"]),
		ms(m["go-runnable-p99-µs"]), ms(m["go-runnable-max-µs"]), fmtNum(m["go-runnable-ms/s"]), int(m["gomaxprocs"]))
	if g["go-runnable-p99-µs"] > 0 && g["go-runnable-p99-µs"] <= m["go-runnable-p99-µs"]/2 && g["busy-p99-µs"] >= 0.8*m["busy-p99-µs"] {
		s += " The wait for a P fell to half or less, the busy p99 by less than 20 %: in this run, the wait for a P is not what makes the busy p99."
	}
	return s
}

// holQueues is holAccount's UDP queue and run delay part.
func holQueues(m map[string]float64) string {
	if _, ok := m["slow-thread-delay-ms"]; ok {
		return fmt.Sprintf(" The slowest 1 %% of the busy pings took %s ms on average. The largest the client's UDP receive queue was during each of them averaged %s KiB (kernel memory, datagram overhead included: %s ms at the transfer's rate; at most %s KiB over the transfer, %s datagrams dropped), and the process's most delayed thread (both ends share it) waited %s ms, runnable but without a CPU, over the 10 ms sampling intervals that cover each of them (schedstat run delay), while other processes used %s CPU-seconds per second of the machine's %d cores (/proc/stat). The queues and threads were sampled every 10 ms from within the process, which took %s ms per second.",
			fmtNum(m["slow-lat-ms"]), fmtNum(m["rxq-slow-KiB"]), fmtNum(m["rxq-slow-wait-ms"]), fmtNum(m["rxq-max-KiB"]), fmtNum(m["udp-drops"]),
			fmtNum(m["slow-thread-delay-ms"]), fmtNum(m["others-cpu"]), runtime.NumCPU(), fmtNum(m["sampler-ms/s"]))
	}
	return fmt.Sprintf(" The slowest 1 %% of the busy pings took %s ms on average. The largest the client's UDP receive queue was during each of them averaged %s KiB (kernel memory, datagram overhead included: %s ms at the transfer's rate; at most %s KiB over the transfer, %s datagrams dropped), and, over the 10 ms sampling intervals that cover each of them, the client's most delayed thread waited %s ms, the server's %s ms, runnable but without a CPU (schedstat run delay; both processes are pinned to one core each of a shared machine); over the transfer the client's threads waited %s ms per second and the server's %s ms per second, while other processes than the client used %s ms per second of the client's core and other processes than the server %s ms per second of the server's (/proc/stat). The queues were sampled every 10 ms by the benchmark's process, which used %s of a core doing so.",
		fmtNum(m["slow-lat-ms"]), fmtNum(m["rxq-slow-KiB"]), fmtNum(m["rxq-slow-wait-ms"]), fmtNum(m["rxq-max-KiB"]), fmtNum(m["udp-drops"]),
		fmtNum(m["slow-client-thread-delay-ms"]), fmtNum(m["slow-server-thread-delay-ms"]), fmtNum(m["client-run-delay-ms/s"]), fmtNum(m["server-run-delay-ms/s"]),
		fmtNum(m["client-core-others-ms/s"]), fmtNum(m["server-core-others-ms/s"]), fmtNum(m["sampler-cpu"]))
}

// shapedCause says, from a shaped-link result's figures, what limited it:
// the relay's own lateness and CPU, and for a window-limited peer the
// rate its window allows at the round trip its pings saw.
func shapedCause(m map[string]float64) string {
	var b strings.Builder
	if _, ok := m["relay-late-max-ms"]; ok {
		if rc, ok := m["relay-cpu"]; ok {
			fmt.Fprintf(&b, " The relay itself sent the result's data %s ms late on average and %s ms at most (it runs in a process of its own, which used %s CPU-seconds per second of the transfer; the benchmark's process, both ends, used %s).",
				fmtNum(m["relay-late-mean-ms"]), fmtNum(m["relay-late-max-ms"]), fmtNum(rc), fmtNum(m["cpu-busy"]))
			if rd, ok := m["relay-run-delay-ms/s"]; ok {
				fmt.Fprintf(&b, " The relay's threads waited for a CPU %s ms per second of the transfer, the benchmark's %s ms (runnable, not running: schedstat run delay, all threads summed).", fmtNum(rd), fmtNum(m["ends-run-delay-ms/s"]))
			}
		} else {
			fmt.Fprintf(&b, " The relay itself sent the result's data %s ms late on average and %s ms at most (it shares the benchmark's process, which used %s CPU-seconds per second of the transfer, with both ends).",
				fmtNum(m["relay-late-mean-ms"]), fmtNum(m["relay-late-max-ms"]), fmtNum(m["cpu-busy"]))
		}
		if o, ok := m["others-cpu"]; ok {
			fmt.Fprintf(&b, " Other processes (than the benchmark's and the relay's) used %s CPU-seconds per second of the machine's %d cores during the run (/proc/stat).", fmtNum(o), runtime.NumCPU())
		}
	}
	if w := m["window-KiB"]; w > 0 && m["busy-p50-µs"] > 0 {
		bound := w * 1024 / (m["busy-p50-µs"] / 1e6)
		fmt.Fprintf(&b, " A stream receive window of %s KiB allows at most that much of the result in flight per round trip: at the busy ping p50, %s, that is %s MB/s, %s %% of the link rate.",
			fmtNum(w), ms(m["busy-p50-µs"]), fmtNum(bound/1e6), fmtNum(100*bound/(m["link-Mbit/s"]*1e6/8)))
	}
	return b.String()
}

// spanRow is one line of BenchmarkSessions.spans: an object size (0 for
// the totals) and, in KiB per session, the free space inside the spans of
// that size, the spans, their live objects and what the process allocated
// of that size (the heap profile's sampled alloc space).
type spanRow struct {
	size                         int
	free, spans, live, allocated float64
}

// spanRows reads BenchmarkSessions.spans: the totals, then the object
// sizes with the most free space in their spans.
func spanRows(seriesDir string) (all spanRow, rows []spanRow, ok bool) {
	b, err := os.ReadFile(filepath.Join(seriesDir, "BenchmarkSessions.spans"))
	if err != nil {
		return all, nil, false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			continue
		}
		var r spanRow
		v := make([]float64, 4)
		for i := range v {
			v[i], _ = strconv.ParseFloat(f[i+1], 64)
		}
		r.free, r.spans, r.live, r.allocated = v[0], v[1], v[2], v[3]
		if f[0] == "all" {
			all = r
			continue
		}
		r.size, _ = strconv.Atoi(f[0])
		rows = append(rows, r)
	}
	return all, rows, len(rows) > 0
}

// fragments says where the heap's free space inside spans is, from
// BenchmarkSessions.spans, and what debug.FreeOSMemory changed.
func fragments(seriesDir string, m map[string]float64) string {
	all, rows, ok := spanRows(seriesDir)
	if !ok {
		return ""
	}
	var parts []string
	for _, r := range rows[:min(4, len(rows))] {
		parts = append(parts, fmt.Sprintf("%d B (%s KiB free in %s KiB of spans; %s KiB of that size allocated per session since the process started, %s KiB live)",
			r.size, fmtNum(r.free), fmtNum(r.spans), fmtNum(r.allocated), fmtNum(r.live)))
	}
	s := fmt.Sprintf(" The server's heap dump, read span by span (its spans, the whole process's heap in use divided by the sessions held, add up to %s KiB per session), puts %s KiB per session of free space inside spans, most in objects of %s: sizes where the process allocated many times what stays live, so that the short-lived objects of each handshake (by the heap profile: AES key schedules, HKDF and HMAC states, SHA-256 states) leave spans partly empty around the connection's long-lived ones.",
		fmtNum(all.spans), fmtNum(all.free), strings.Join(parts, ", "))
	if v, ok := m["KiB-heap-change-FreeOSMemory/session"]; ok {
		s += fmt.Sprintf(" debug.FreeOSMemory changed HeapInuse by %s KiB per session: it returns whole free spans to the OS, not the free space inside spans in use.", fmtNum(v))
	}
	return s
}

// owners reads the heap profile's owner breakdown the sessions benchmark
// wrote ("KiB owner" a line) as "owner X, …".
func owners(seriesDir string) string {
	b, err := os.ReadFile(filepath.Join(seriesDir, "BenchmarkSessions.owners"))
	if err != nil {
		return "not written in this run"
	}
	var parts []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, o, ok := strings.Cut(line, " "); ok {
			parts = append(parts, o+" "+k)
		}
	}
	return strings.Join(parts, ", ")
}

// missed writes, for each goal missed, the figures of the run that say
// what limits it.
func (rep *report) missed(md *strings.Builder, rs []ratio, seriesDir string) {
	var any bool
	for _, r := range rs {
		if !r.found || r.ok || r.ceiling {
			continue
		}
		if !any {
			md.WriteString("## Goals missed in this run, and what the run measured about them\n\n")
			any = true
		}
		_, name, _ := rep.lookup(r.num)
		m := map[string]float64{}
		if res, ok := rep.results[name]; ok {
			m = res.metrics
		}
		fmt.Fprintf(md, "- **%s**: %.4g (goal %s %g).", r.what, r.value, r.cmp, r.threshold)
		if r.den[0] != "" {
			nv, nn, _ := rep.lookup(r.num)
			dv, dn, _ := rep.lookup(r.den)
			fmt.Fprintf(md, " Measured: %s %s (%s) against %s %s (%s).", fmtNum(nv), r.num[1], strings.TrimPrefix(nn, "Benchmark"), fmtNum(dv), r.den[1], strings.TrimPrefix(dn, "Benchmark"))
		}
		switch {
		case name == streamVsBare && r.num[1] == "flow/bare":
			fmt.Fprintf(md, " %s", streamText(m, rep.bareWrites(m)))
		case m["busy-p99-µs"] > 0 && m["link-%"] > 0:
			fmt.Fprintf(md, " Idle p99 %s, busy p99 %s, busy max %s, longest stall %s ms; the result came at %s %% of the link rate; the bottleneck queue dropped %s datagrams and held data %s ms at most (%s ms on average): see the shaped-link account below.",
				ms(m["idle-p99-µs"]), ms(m["busy-p99-µs"]), ms(m["busy-max-µs"]), fmtNum(m["stall-ms"]), fmtNum(m["link-%"]), fmtNum(m["queue-drops"]), fmtNum(m["queue-max-ms"]), fmtNum(m["queue-mean-ms"]))
			md.WriteString(slowPath(m))
			md.WriteString(shapedCause(m))
		case m["busy-p99-µs"] > 0:
			fmt.Fprintf(md, " Idle p50 %s and p99 %s; during the transfer p50 %s, p99 %s, max %s, longest stall %s ms over %s pings; the result streamed at %s MB/s, while the measuring process (the client; in one process, both ends) used %s CPU-seconds per wall second (%d cores).",
				ms(m["idle-p50-µs"]), ms(m["idle-p99-µs"]), ms(m["busy-p50-µs"]), ms(m["busy-p99-µs"]), ms(m["busy-max-µs"]), fmtNum(m["stall-ms"]), fmtNum(m["pings-during"]), fmtNum(m["transfer-MB/s"]), fmtNum(m["cpu-busy"]), runtime.NumCPU())
			if w, ok := rep.results[name+"-window-64k"]; ok {
				wm := w.metrics
				fmt.Fprintf(md, " In the same run, the same benchmark with a 64 KiB stream receive window (at most that much of the result in flight ahead of a ping's answer) measured busy p99 %s and max %s against an idle p99 of %s, at %s MB/s.",
					ms(wm["busy-p99-µs"]), ms(wm["busy-max-µs"]), ms(wm["idle-p99-µs"]), fmtNum(wm["transfer-MB/s"]))
			}
			if g, ok := rep.results[name+"-gomaxprocs-2"]; ok {
				md.WriteString(gomaxprocsText(m, g.metrics))
			}
			md.WriteString(holAccount(m))
		case name == sessions && r.num[1] == "KiB-heap/session":
			fmt.Fprintf(md, " Of the %s KiB of heap in use per session, %s KiB are live objects (HeapAlloc after GC) and the other %s KiB are free space inside the spans those objects keep in use (fragmentation); the server also holds %s goroutines per session, whose stacks (%s KiB per session) are not heap. Who holds the live heap, by the server's heap profile (KiB per session): %s.",
				fmtNum(m["KiB-heap/session"]), fmtNum(m["KiB-live/session"]), fmtNum(m["KiB-heap/session"]-m["KiB-live/session"]), fmtNum(m["goroutines/session"]), fmtNum(m["KiB-stacks/session"]), owners(seriesDir))
			md.WriteString(fragments(seriesDir, m))
		case name == sessions:
			fmt.Fprintf(md, " %s of 1,000 dials failed; the burst took %s s, %s sessions per second, and %s ms of the server's CPU per dial (TLS handshake, HTTP/3 CONNECT, initialize); the dials wait at most %s s each, so the burst fails once the machine gives both ends less CPU than 1,000 dials need in that time.",
				fmtNum(m["burst-refused"]), fmtNum(m["burst-s"]), fmtNum(m["burst-sessions/s"]), fmtNum(m["burst-server-cpu-ms/dial"]), fmtNum(m["dial-timeout-s"]))
		}
		if m["loadavg"] > 0 {
			fmt.Fprintf(md, " The machine's 1-minute load average was %s.", fmtNum(m["loadavg"]))
		}
		md.WriteString("\n")
	}
	if any {
		md.WriteString("\n")
	}
}

func (r ratio) line() string {
	if !r.found {
		return fmt.Sprintf("%-100s not measured", r.what)
	}
	return fmt.Sprintf("%-100s %10.4g  (goal %s %g: %s)", r.what, r.value, r.cmp, r.threshold, r.verdict())
}

// versions reads the versions of the peers from go.mod.
func versions() string {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		return "unknown"
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		for _, mod := range []string{"github.com/quic-go/quic-go", "github.com/quic-go/webtransport-go", "github.com/modelcontextprotocol/go-sdk", "github.com/fxamacker/cbor/v2", "google.golang.org/protobuf"} {
			if len(f) >= 2 && f[0] == mod {
				out = append(out, mod+" "+f[1])
			}
		}
	}
	return strings.Join(out, ", ")
}
