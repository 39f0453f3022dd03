package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
