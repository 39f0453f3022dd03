package main

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcp-flow/mcp-flow/bench/workload"
)

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

type chart struct {
	file, title, prefix, unit string
}

var charts = []chart{
	{"ping-p50.svg", "Idle ping, p50", "BenchmarkPing/", "p50-µs"},
	{"echo-c16.svg", "Echo tools/call, concurrency 16", "BenchmarkEcho/", "calls/s"},
	{"large.svg", "Large result, end to end (16 and 256 MiB; bare stacks at each write size)", "BenchmarkLarge/", "MB/s"},
	{"streams.svg", "Parallel streams, aggregate", "BenchmarkParallelStreams/", "MB/s"},
	{"setup.svg", "Connect + initialize, p50", "BenchmarkSetup/", "p50-µs"},
	{"first-result.svg", "Time to the first result (dial, initialize, one echo; blocked: UDP dropped), p50", "BenchmarkFirstResult/", "ttfr-p50-ms"},
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

// svgSeries draws latency (log scale) over the time each ping was
// scheduled, one line per peer (workload.SVGSeries, the chart of
// `mcp-flow bench -svg` too).
func svgSeries(title string, labels []string, series [][]point) string {
	ws := make([][]workload.Point, len(series))
	for i, s := range series {
		for _, p := range s {
			ws[i] = append(ws[i], workload.Point{At: p.at, Lat: p.lat})
		}
	}
	return workload.SVGSeries(title, labels, ws)
}
