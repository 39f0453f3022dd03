// Command benchreport reads `go test -bench` output (benchstat's format) of
// ./bench and ./codec, prints the goal ratios, and writes docs/BENCHMARKS.md
// with SVG charts in docs/bench/.
//
//	go run ./bench/cmd/benchreport -in bench.out -out docs
package main

import (
	"bufio"
	"flag"
	"fmt"
	"html"
	"io"
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

// goal is one of the goals, as a ratio of two measurements.
type goal struct {
	what      string
	num, den  [2]string // benchmark, unit
	cmp       string    // ">=" or "<="
	threshold float64
}

var goals = []goal{
	{"execution stream vs bare webtransport-go stream (256 MiB, MB/s)", [2]string{"BenchmarkLarge/flow-cbor/256MiB", "MB/s"}, [2]string{"BenchmarkLarge/bare-webtransport/256MiB", "MB/s"}, ">=", 0.9},
	{"large result vs go-sdk stdio, base64 (256 MiB, MB/s)", [2]string{"BenchmarkLarge/flow-cbor/256MiB", "MB/s"}, [2]string{"BenchmarkLarge/sdk-stdio/256MiB", "MB/s"}, ">=", 10},
	{"large result vs go-sdk Streamable HTTP, base64 (256 MiB, MB/s)", [2]string{"BenchmarkLarge/flow-cbor/256MiB", "MB/s"}, [2]string{"BenchmarkLarge/sdk-http/256MiB", "MB/s"}, ">=", 10},
	{"peak RSS, 256 MiB vs 16 MiB result, MCP-Flow (bounded: ≈1)", [2]string{"BenchmarkLarge/flow-cbor/256MiB", "peak-RSS-MiB"}, [2]string{"BenchmarkLarge/flow-cbor/16MiB", "peak-RSS-MiB"}, "<=", 1.5},
	{"ping p99 during a 256 MiB result vs idle, MCP-Flow", [2]string{"BenchmarkHeadOfLine/flow-cbor", "busy-p99-µs"}, [2]string{"BenchmarkHeadOfLine/flow-cbor", "idle-p99-µs"}, "<=", 3},
	{"the same with a 64 KiB stream receive window (flow.Limits.StreamReceiveWindow)", [2]string{"BenchmarkHeadOfLine/flow-cbor-window-64k", "busy-p99-µs"}, [2]string{"BenchmarkHeadOfLine/flow-cbor-window-64k", "idle-p99-µs"}, "<=", 3},
	{"echo calls/s at concurrency 16 vs go-sdk stdio", [2]string{"BenchmarkEcho/flow-cbor/c=16", "calls/s"}, [2]string{"BenchmarkEcho/sdk-stdio/c=16", "calls/s"}, ">=", 2},
	{"echo calls/s at concurrency 16 vs go-sdk Streamable HTTP", [2]string{"BenchmarkEcho/flow-cbor/c=16", "calls/s"}, [2]string{"BenchmarkEcho/sdk-http/c=16", "calls/s"}, ">=", 2},
	{"idle ping p50 vs bare webtransport-go ping-pong", [2]string{"BenchmarkPing/flow-cbor", "p50-µs"}, [2]string{"BenchmarkPing/bare-webtransport", "p50-µs"}, "<=", 1.25},
	{"CBOR vs JSON size, tools/call result with a 1 MiB image", [2]string{"BenchmarkDecode/tools_call_result_image_1MiB/cbor", "bytes/msg"}, [2]string{"BenchmarkDecode/tools_call_result_image_1MiB/json", "bytes/msg"}, "<=", 0.75},
	{"CBOR vs JSON decode time, tools/call result with a 1 MiB image", [2]string{"BenchmarkDecode/tools_call_result_image_1MiB/cbor", "ns/op"}, [2]string{"BenchmarkDecode/tools_call_result_image_1MiB/json", "ns/op"}, "<=", 1},
}

type ratio struct {
	goal
	value float64
	ok    bool
	found bool
}

func (r *report) ratios() []ratio {
	var out []ratio
	for _, g := range goals {
		n, ok1 := r.get(g.num[0], g.num[1])
		d, ok2 := r.get(g.den[0], g.den[1])
		rt := ratio{goal: g, found: ok1 && ok2 && d != 0}
		if rt.found {
			rt.value = n / d
			rt.ok = (g.cmp == ">=" && rt.value >= g.threshold) || (g.cmp == "<=" && rt.value <= g.threshold)
		}
		out = append(out, rt)
	}
	return out
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
	{"large.svg", "Large result, end to end (16 and 256 MiB)", "BenchmarkLarge/", "MB/s"},
	{"hol-p99.svg", "Ping p99 while 256 MiB is in flight", "BenchmarkHeadOfLine/", "busy-p99-µs"},
	{"streams.svg", "Parallel streams, aggregate", "BenchmarkParallelStreams/", "MB/s"},
	{"setup.svg", "Connect + initialize, p50", "BenchmarkSetup/", "p50-µs"},
}

func main() {
	in := flag.String("in", "bench.out", "go test -bench output")
	out := flag.String("out", "docs", "directory for BENCHMARKS.md and bench/*.svg")
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
	fmt.Println("Goals (ratios measured in this run):")
	for _, r := range rs {
		fmt.Println("  " + r.line())
	}
	if err := os.MkdirAll(filepath.Join(*out, "bench"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	var md strings.Builder
	md.WriteString("# Benchmarks\n\nGenerated by `make bench` (`bench/cmd/benchreport`) from one run of `go test -bench` over `./bench` and `./codec`. Every ratio compares two measurements of the same run on the same machine.\n\n")
	fmt.Fprintf(&md, "- Date: %s\n- Machine: %s, %s/%s, %d cores\n- Go: %s\n- Versions: %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		rep.header["cpu"], rep.header["goos"], rep.header["goarch"], runtime.NumCPU(), runtime.Version(), versions())
	md.WriteString("## Goals\n\n| goal | ratio | target | met |\n|---|---|---|---|\n")
	for _, r := range rs {
		if !r.found {
			fmt.Fprintf(&md, "| %s | not measured | %s %g | — |\n", r.what, r.cmp, r.threshold)
			continue
		}
		fmt.Fprintf(&md, "| %s | %.6g | %s %g | %s |\n", r.what, r.value, r.cmp, r.threshold, map[bool]string{true: "yes", false: "**no**"}[r.ok])
	}
	md.WriteString("\n")
	// The analysis of missed goals is written by people, from profiles; it is
	// kept next to the charts and included as it is.
	if a, err := os.ReadFile(filepath.Join(*out, "bench", "analysis.md")); err == nil {
		md.Write(a)
		md.WriteString("\n")
	}
	for _, c := range charts {
		labels, values := rep.group(c.prefix, c.unit)
		if len(labels) == 0 {
			continue
		}
		if err := os.WriteFile(filepath.Join(*out, "bench", c.file), []byte(svgBars(c.title, c.unit, labels, values)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "benchreport:", err)
			os.Exit(1)
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
	if err := os.WriteFile(filepath.Join(*out, "BENCHMARKS.md"), []byte(md.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", filepath.Join(*out, "BENCHMARKS.md"))
}

func (r ratio) line() string {
	if !r.found {
		return fmt.Sprintf("%-70s not measured", r.what)
	}
	return fmt.Sprintf("%-70s %10.6g  (goal %s %g: %s)", r.what, r.value, r.cmp, r.threshold, map[bool]string{true: "met", false: "MISSED"}[r.ok])
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
