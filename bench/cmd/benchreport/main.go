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
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/mcp-flow/mcp-flow/bench/workload"
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

// fmtNum formats a figure as the charts of `mcp-flow bench` do.
var fmtNum = workload.FmtNum

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

func ms(v float64) string { return fmtNum(v/1e3) + " ms" }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchreport:", err)
	os.Exit(1)
}

func main() {
	in := flag.String("in", "bench.out", "go test -bench output")
	out := flag.String("out", "docs", "directory for BENCHMARKS.md and bench/*.svg")
	seriesDir := flag.String("series", "bench.series", "the latency series and heap profile the benchmarks wrote (MCP_FLOW_BENCH_SERIES)")
	readme := flag.String("readme", "", "rewrite this file's "+summaryStart+" block (the stall chart and the summary table) from the run; none when empty")
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
	md, stalls := rep.markdown(rs, readSeries(*seriesDir), *seriesDir, filepath.Join(*out, "bench"))
	if err := os.WriteFile(filepath.Join(*out, "BENCHMARKS.md"), []byte(md), 0o644); err != nil {
		fail(err)
	}
	fmt.Println("wrote", filepath.Join(*out, "BENCHMARKS.md"))
	if *readme != "" {
		if err := rep.writeReadme(*readme, filepath.Join(*out, "bench"), stalls); err != nil {
			fail(err)
		}
		fmt.Println("wrote", *readme+"'s summary")
	}
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
