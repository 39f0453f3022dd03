package workload

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// A Point is one ping of a chart's series: when it was scheduled and how
// long it took, in milliseconds.
type Point struct{ At, Lat float64 }

// Points turns samples into a chart's series.
func Points(s []Sample) []Point {
	out := make([]Point, len(s))
	for i, x := range s {
		out[i] = Point{float64(x.At.Microseconds()) / 1e3, float64(x.Lat.Microseconds()) / 1e3}
	}
	return out
}

var palette = []string{"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"}

// SVGSeries draws latency (log scale) over the time each ping was
// scheduled, one line per series, labelled in a legend: the stall chart.
// The y axis has a gridline at each power of ten; the first series is
// drawn last and thicker, on top of the others.
func SVGSeries(title string, labels []string, series [][]Point) string {
	const h, left, top, bottom = 400, 76, 30, 56
	// The legend's width: 190 px, or what the longest label needs (about
	// 6.5 px a character at 12 px sans-serif).
	right := 190
	for _, l := range labels {
		right = max(right, 36+int(6.5*float64(len([]rune(l)))))
	}
	w := 570 + right
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	var maxT, maxL, minL float64 = 1, 1, 1e9
	for _, s := range series {
		for _, p := range s {
			maxT, maxL, minL = max(maxT, p.At), max(maxL, p.Lat), min(minL, max(p.Lat, 0.01))
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
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for e := lo; e <= hi; e++ {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s ms</text>`+"\n", left, w-right, y(math.Pow(10, e)), y(math.Pow(10, e)), left-4, y(math.Pow(10, e))+4, strconv.FormatFloat(math.Pow(10, e), 'f', -1, 64))
	}
	fmt.Fprintf(&b, `<text transform="translate(14,%d) rotate(-90)" text-anchor="middle">ping latency (log scale)</text>`+"\n", top+int(ph/2))
	step := tickStep(maxT)
	for t := 0.0; t <= maxT*1.0001; t += step {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#999"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(t), x(t), h-bottom, h-bottom+4, x(t), h-bottom+16, FmtNum(t))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#999"/>`+"\n", left, w-right, h-bottom, h-bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">scheduled send time since the result was asked for (ms)</text>`+"\n", left+int(pw/2), h-12)
	for i := len(series) - 1; i >= 0; i-- {
		c, sw := palette[i%len(palette)], "1"
		if i == 0 && len(series) > 1 {
			sw = "1.8"
		}
		var pts strings.Builder
		for _, p := range series[i] {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(p.At), y(p.Lat))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="%s" points="%s"/>`+"\n", c, sw, pts.String())
	}
	for i, l := range labels {
		c := palette[i%len(palette)]
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", w-right+10, top+i*18, c, w-right+26, top+i*18+11, html.EscapeString(l))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// tickStep is the x axis's tick spacing for a span of maxT: 1, 2 or 5
// times a power of ten, 4 to 10 ticks.
func tickStep(maxT float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(maxT)))
	for _, m := range []float64{0.1, 0.2, 0.5, 1, 2, 5} {
		if maxT/(m*p) <= 10 {
			return m * p
		}
	}
	return 10 * p
}

// FmtNum formats v with the precision a chart or table shows.
func FmtNum(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
