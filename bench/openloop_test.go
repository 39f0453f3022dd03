package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/workload"
)

// pingInterval is the open-loop schedule: one ping every 2 ms, whatever
// the answers.
const pingInterval = 2 * time.Millisecond

// idlePings is how many pings the idle phase sends (1 s at pingInterval),
// enough for a steady idle p99.
const idlePings = 500

// sample is one ping of an open loop (workload.Sample).
type sample = workload.Sample

// openLoop, quantile, lats and longestStall are the workload's, shared
// with `mcp-flow bench`.
var (
	openLoop     = workload.OpenLoop
	quantile     = workload.Quantile
	lats         = workload.Latencies
	longestStall = workload.LongestStall
)

// holRun is one head-of-line measurement: an idle open loop, then an open
// loop while an n-byte result is fetched on the same session.
type holRun struct {
	Idle, Busy []sample
	Transfer   time.Duration
	Bytes      int64
	// CPU is the CPU time this process used during the transfer.
	CPU time.Duration
	// Sched, when measured, is what the kernel's scheduler and Go's
	// garbage collector did to both processes during the transfer.
	Sched *schedAccount `json:",omitempty"`
	// GoSched is how long this process's goroutines waited runnable for
	// the Go scheduler during the transfer.
	GoSched *goSched `json:",omitempty"`
	// BusyStart is when the busy open loop started (Unix ns), the origin
	// of the busy samples' At.
	BusyStart int64
	// Queues, when sampled, are the UDP socket queues of both ends during
	// the busy phase, every queueEvery (sampleQueues).
	Queues []timedQueues `json:"-"`
	// OneProcess is true when both ends ran in this process: the Queues'
	// ClientDelay is the run delay of its threads.
	OneProcess bool `json:"-"`
}

// runHOL measures t: idle pings, then pings during Fetch(n).
func runHOL(ctx context.Context, t mcpTarget, n int64) (*holRun, error) {
	return runHOLSched(ctx, t, n, nil)
}

// runHOLSched is runHOL with sched (when not nil) called at the
// transfer's start, and what it returns at the transfer's end.
func runHOLSched(ctx context.Context, t mcpTarget, n int64, sched func() func() *schedAccount) (*holRun, error) {
	var sa *schedAccount
	var gs *goSched
	var c0, cpu time.Duration
	h, err := workload.HeadOfLine(ctx, t, workload.HOLConfig{Bytes: n, Interval: pingInterval, IdlePings: idlePings,
		OnTransfer: func() func() {
			var schedEnd func() *schedAccount
			if sched != nil {
				schedEnd = sched()
			}
			gsEnd := goSchedFrom()
			c0 = cpuTime(0)
			return func() {
				cpu = cpuTime(0) - c0
				gs = gsEnd()
				if schedEnd != nil {
					sa = schedEnd()
				}
			}
		}})
	if err != nil {
		return nil, err
	}
	return &holRun{Idle: h.Idle, Busy: h.Busy, Transfer: h.Transfer, Bytes: h.Bytes, CPU: cpu, Sched: sa, GoSched: gs, BusyStart: h.BusyStart}, nil
}

func µs(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// reportLatencies reports p50, p99, p99.9 and max of s under prefix.
func reportLatencies(b *testing.B, prefix string, s []sample) {
	l := lats(s)
	b.ReportMetric(µs(quantile(l, 0.5)), prefix+"p50-µs")
	b.ReportMetric(µs(quantile(l, 0.99)), prefix+"p99-µs")
	b.ReportMetric(µs(quantile(l, 0.999)), prefix+"p99.9-µs")
	b.ReportMetric(µs(quantile(l, 1)), prefix+"max-µs")
}

// report reports r and writes its busy series for the chart.
func (r *holRun) report(b *testing.B) {
	reportLatencies(b, "idle-", r.Idle)
	reportLatencies(b, "busy-", r.Busy)
	b.ReportMetric(float64(longestStall(r.Busy).Microseconds())/1e3, "stall-ms")
	b.ReportMetric(float64(len(r.Busy)), "pings-during")
	b.ReportMetric(float64(r.Bytes)/r.Transfer.Seconds()/1e6, "transfer-MB/s")
	b.ReportMetric(float64(r.Bytes)/(1<<20), "result-MiB")
	b.ReportMetric(r.CPU.Seconds()/r.Transfer.Seconds(), "cpu-busy")
	reportLoad(b)
	r.reportQueues(b)
	r.Sched.report(b, r.Transfer)
	r.GoSched.report(b, r.Transfer)
	writeSeries(b, r.Busy)
}

// writeSeries writes a busy phase's samples to the directory named by
// MCP_FLOW_BENCH_SERIES (`make bench` sets it), one file per benchmark,
// for benchreport's latency-over-time charts: "at-ms latency-ms" a line.
func writeSeries(b *testing.B, s []sample) {
	dir := os.Getenv("MCP_FLOW_BENCH_SERIES")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	for _, x := range s {
		fmt.Fprintf(&sb, "%.3f %.3f\n", float64(x.At.Microseconds())/1e3, float64(x.Lat.Microseconds())/1e3)
	}
	name := strings.ReplaceAll(b.Name(), "/", "__") + ".series"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

// reportLoad reports the machine's 1-minute load average (the machine is
// shared: it says how much else ran beside the benchmark).
func reportLoad(b *testing.B) {
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		var v float64
		if _, err := fmt.Sscanf(string(l), "%g", &v); err == nil {
			b.ReportMetric(v, "loadavg")
		}
	}
}
