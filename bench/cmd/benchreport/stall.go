package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// A stallTarget is a line of the stall charts and a row of the summary:
// the benchmarks' row name for it and what the charts call it.
type stallTarget struct{ row, label string }

// stallTargets are the stall charts' lines, in legend order: MCP-Flow
// first (drawn on top), then the baselines the issue names (issue 29).
var stallTargets = []stallTarget{
	{"flow-cbor", "MCP-Flow (CBOR)"},
	{"sdk-http", "go-sdk Streamable HTTP"},
	{"sdk-stdio", "go-sdk stdio"},
	{"ts-sdk-http", "TS SDK Streamable HTTP"},
	{"ts-sdk-stdio", "TS SDK stdio"},
	{"deno-ts-sdk", "TS SDK on Deno, MCP-Flow"},
}

// A stallChart is one chart of busy-ping series: every stallTarget that
// bench measured and wrote a series for.
type stallChart struct {
	file, title, bench string
	// suffix follows each target's row name in bench: a link profile
	// named in the row (BenchmarkShapedLink's "-50ms-20mbit-loss1").
	suffix string
}

// stallCharts: the loopback chart and the shaped link's. A benchmark
// whose rows carry a link profile (BenchmarkShapedLink/PROFILE/PEER) gets
// one chart per profile: the first profile in file, the others in
// file's name with "-PROFILE" before ".svg".
var stallCharts = []stallChart{
	{"stall.svg", "Ping latency during the large result, loopback", "BenchmarkHeadOfLine", ""},
	{"stall-shaped.svg", "Ping latency during the large result, shaped link", "BenchmarkShapedLink", ""},
	{"stall-shaped-lossy.svg", "Ping latency during the large result, shaped link, 1 % loss", "BenchmarkShapedLink", "-50ms-20mbit-loss1"},
}

// A drawnStall is a stall chart written: its file (in the chart
// directory) and title.
type drawnStall struct{ file, title string }

// stallLines returns, for the benchmark bench, its profiles in the order
// the run measured them ("" when its rows have none) and for each one
// the labels and series of the stallTargets it has a series of.
func (rep *report) stallLines(bench, suffix string, series map[string][]point) (profiles []string, labels map[string][]string, lines map[string][][]point) {
	labels, lines = map[string][]string{}, map[string][][]point{}
	seen := map[string]bool{}
	for _, n := range rep.order {
		rest, ok := strings.CutPrefix(n, bench+"/")
		if !ok {
			continue
		}
		profile, _ := splitLast(rest)
		if !seen[profile] {
			seen[profile] = true
			profiles = append(profiles, profile)
		}
	}
	for _, p := range profiles {
		for _, tg := range stallTargets {
			name := bench + "/" + tg.row + suffix
			if p != "" {
				name = bench + "/" + p + "/" + tg.row + suffix
			}
			s := series[name]
			if len(s) == 0 {
				continue
			}
			l := tg.label
			if mib, ok := rep.get(name, "result-MiB"); ok {
				l += ", " + mibs(mib)
			}
			labels[p], lines[p] = append(labels[p], l), append(lines[p], s)
		}
	}
	return profiles, labels, lines
}

// mibs formats a size in MiB: "64 MiB", "0.25 MiB".
func mibs(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + " MiB" }

// splitLast splits a row's name at its last "/": (profile, peer).
func splitLast(rest string) (string, string) {
	if i := strings.LastIndex(rest, "/"); i >= 0 {
		return rest[:i], rest[i+1:]
	}
	return "", rest
}

// drawStalls writes the stall charts into chartDir.
func (rep *report) drawStalls(series map[string][]point, chartDir string) []drawnStall {
	var out []drawnStall
	for _, c := range stallCharts {
		profiles, labels, lines := rep.stallLines(c.bench, c.suffix, series)
		first := true
		for _, p := range profiles {
			if len(lines[p]) == 0 {
				continue
			}
			file, title := c.file, c.title
			if !first {
				file = strings.TrimSuffix(c.file, ".svg") + "-" + strings.NewReplacer("/", "-", "=", "-").Replace(p) + ".svg"
			}
			if p != "" {
				title += " (" + p + ")"
			}
			first = false
			if m, ok := rep.results[c.bench+"/"+strings.TrimPrefix(p+"/", "/")+stallTargets[0].row+c.suffix]; ok && m.metrics["link-Mbit/s"] > 0 {
				title += fmt.Sprintf(", %g Mbit/s, %g ms round trip", m.metrics["link-Mbit/s"], m.metrics["rtt-ms"])
			}
			if err := os.WriteFile(filepath.Join(chartDir, file), []byte(svgSeries(title, labels[p], lines[p])), 0o644); err != nil {
				fail(err)
			}
			out = append(out, drawnStall{file, title})
		}
	}
	return out
}

// stallSection writes BENCHMARKS.md's section of the stall charts drawn.
func stallSection(md *strings.Builder, drawn []drawnStall) {
	if len(drawn) == 0 {
		return
	}
	md.WriteString("## Stall charts: ping latency during the large result\n\nThe open loop of the head-of-line benchmarks (a ping every 2 ms, each timed from its scheduled send time) during the large result, for MCP-Flow and the go-sdk's and the TypeScript SDK's Streamable HTTP and stdio, on one log-scale axis: loopback (BenchmarkHeadOfLine, client and server in the benchmark's process but the stdio servers) and through the shaped link (BenchmarkShapedLink). Each legend gives the result's size; a line ends when its result has arrived. On the shaped link with 1 % loss, the go-sdk's Streamable HTTP crosses the TCP relay, which relays bytes and cannot lose packets: its line has the rate, the delay and the queue of the link but no loss (docs/design.md, \"Pacing execution streams\").\n\n")
	for _, d := range drawn {
		fmt.Fprintf(md, "![%s](bench/%s)\n\n", d.title, d.file)
	}
}

// The README's summary block, between these markers, is rewritten by
// benchreport -readme from the run.
const (
	summaryStart = "<!-- bench:summary -->"
	summaryEnd   = "<!-- /bench:summary -->"
)

// summaryRow is a row of the README's summary: a transport, the
// stallTargets rows that measure it (the go-sdk's, then the TS SDK's).
type summaryRow struct {
	label string
	rows  []string
}

var summaryRows = []summaryRow{
	{"MCP-Flow (CBOR, execution stream)", []string{"flow-cbor"}},
	{"Streamable HTTP (go-sdk / TS SDK)", []string{"sdk-http", "ts-sdk-http"}},
	{"stdio (go-sdk / TS SDK)", []string{"sdk-stdio", "ts-sdk-stdio"}},
	{"MCP-Flow from the TS SDK on Deno (js/src/server.js, draft-02)", []string{"deno-ts-sdk"}},
}

// largeSize returns the largest BenchmarkLarge size that row was measured
// at, and its MB/s.
func (rep *report) largeSize(row string) (size string, mbps float64, ok bool) {
	var best float64
	for _, n := range rep.order {
		rest, found := strings.CutPrefix(n, "BenchmarkLarge/"+row+"/")
		if !found || strings.Contains(rest, "/") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSuffix(rest, "MiB"), "GiB"), 64)
		if err != nil {
			continue
		}
		if strings.HasSuffix(rest, "GiB") {
			v *= 1024
		}
		if m, has := rep.results[n].metrics["MB/s"]; has && v > best {
			best, size, mbps, ok = v, rest, m, true
		}
	}
	return size, mbps, ok
}

// summary is the README's block: the loopback stall chart (chart, a path
// from the README) and a table of the large result's MB/s and the busy
// ping p99 for MCP-Flow, Streamable HTTP and stdio.
func (rep *report) summary(benchmarks, chart, shaped, lossy string) string {
	var b strings.Builder
	b.WriteString(summaryStart + "\n")
	mode := ""
	if v, ok := rep.get(sessions, "sessions-asked"); ok {
		mode = map[bool]string{true: "full mode, ", false: "short mode, "}[v >= 10000]
	}
	fmt.Fprintf(&b, "Measured by `make bench` on %s (%s, %d cores; %sthe machine shared: [BENCHMARKS.md](%s) has every figure, the load and the goals): the large result end to end (BenchmarkLarge, its largest size for each), and the p99 of the open-loop ping during a large result on the same session (BenchmarkHeadOfLine: a ping every 2 ms, each timed from its scheduled send time; the result's size in brackets).\n\n",
		time.Now().UTC().Format("2006-01-02"), strings.TrimSpace(rep.header["cpu"]), runtime.NumCPU(), mode, benchmarks)
	b.WriteString("| transport | large result, MB/s | ping p99 during a large result |\n|---|---|---|\n")
	for _, r := range summaryRows {
		var mbps, p99 []string
		for _, row := range r.rows {
			if size, v, ok := rep.largeSize(row); ok {
				mbps = append(mbps, fmt.Sprintf("%s (%s)", fmtNum(v), strings.Replace(size, "MiB", " MiB", 1)))
			} else {
				mbps = append(mbps, "—")
			}
			if v, ok := rep.get("BenchmarkHeadOfLine/"+row, "busy-p99-µs"); ok {
				p := ms(v)
				if mib, ok := rep.get("BenchmarkHeadOfLine/"+row, "result-MiB"); ok {
					p += " (" + mibs(mib) + ")"
				}
				p99 = append(p99, p)
			} else {
				p99 = append(p99, "—")
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.label, strings.Join(mbps, " / "), strings.Join(p99, " / "))
	}
	if chart != "" {
		fmt.Fprintf(&b, "\n![Ping latency during the large result: MCP-Flow, the go-sdk's and the TypeScript SDK's Streamable HTTP and stdio (log scale)](%s)\n", chart)
	}
	if shaped != "" {
		fmt.Fprintf(&b, "\nThe same through a shaped link (a bottleneck with its queue and round trip): [%s](%s)", filepath.Base(shaped), shaped)
		if lossy != "" {
			fmt.Fprintf(&b, ", and with 1 %% loss: [%s](%s)", filepath.Base(lossy), lossy)
		}
		b.WriteString(".\n")
	}
	b.WriteString(summaryEnd)
	return b.String()
}

// replaceSummary returns doc with the text between its summary markers
// (the markers included) replaced by block.
func replaceSummary(doc, block string) (string, error) {
	i := strings.Index(doc, summaryStart)
	j := strings.Index(doc, summaryEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %s … %s block", summaryStart, summaryEnd)
	}
	return doc[:i] + block + doc[j+len(summaryEnd):], nil
}

// writeReadme rewrites readme's summary block from rep, its charts linked
// from where readme is.
func (rep *report) writeReadme(readme, chartDir string, drawn []drawnStall) error {
	b, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	rel := func(path string) string {
		from, err1 := filepath.Abs(filepath.Dir(readme))
		to, err2 := filepath.Abs(path)
		p, err3 := filepath.Rel(from, to)
		if err := errors.Join(err1, err2, err3); err != nil {
			return path
		}
		return filepath.ToSlash(p)
	}
	chart := func(file string) string {
		for _, d := range drawn {
			if d.file == file {
				return rel(filepath.Join(chartDir, file))
			}
		}
		return ""
	}
	doc, err := replaceSummary(string(b), rep.summary(rel(filepath.Join(filepath.Dir(chartDir), "BENCHMARKS.md")), chart("stall.svg"), chart("stall-shaped.svg"), chart("stall-shaped-lossy.svg")))
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	return os.WriteFile(readme, []byte(doc), 0o644)
}
