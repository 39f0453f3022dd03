package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// pingInterval is the open-loop schedule: one ping every 2 ms, whatever
// the answers.
const pingInterval = 2 * time.Millisecond

// idlePings is how many pings the idle phase sends (1 s at pingInterval),
// enough for a steady idle p99.
const idlePings = 500

// A sample is one ping of an open loop: when it was scheduled to be sent
// (from the start of its phase) and how long it took from then to its
// answer. A ping sent late because the sender was not scheduled counts
// that lateness too: no coordinated omission.
type sample struct{ At, Lat time.Duration }

// openLoop sends a ping every interval on its own goroutine, each timed
// from its scheduled send time, until count pings are sent (count > 0) or
// stop is closed, then waits for every answer. A failed ping fails the
// loop.
func openLoop(ctx context.Context, ping func(context.Context) error, interval time.Duration, count int, stop <-chan struct{}) ([]sample, error) {
	t0 := time.Now()
	var (
		mu       sync.Mutex
		out      []sample
		firstErr error
		wg       sync.WaitGroup
	)
	tm := time.NewTimer(0)
	defer tm.Stop()
	<-tm.C
	for i := 0; count <= 0 || i < count; i++ {
		at := time.Duration(i) * interval
		if wait := time.Until(t0.Add(at)); wait > 0 {
			tm.Reset(wait)
			select {
			case <-tm.C:
			case <-stop:
				tm.Stop()
			}
		}
		select {
		case <-stop:
			count = i // stopped: no more sends
		default:
		}
		if count > 0 && i >= count {
			break
		}
		wg.Go(func() {
			err := ping(ctx)
			lat := time.Since(t0) - at
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("ping %d: %w", i, err)
			}
			out = append(out, sample{at, lat})
		})
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b sample) int { return int(a.At - b.At) })
	return out, firstErr
}

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
	idle, err := openLoop(ctx, t.Ping, pingInterval, idlePings, nil)
	if err != nil {
		return nil, fmt.Errorf("idle: %w", err)
	}
	stop := make(chan struct{})
	fetched := make(chan error, 1)
	var got int64
	var schedEnd func() *schedAccount
	if sched != nil {
		schedEnd = sched()
	}
	var sa *schedAccount
	var gs *goSched
	gsEnd := goSchedFrom()
	t0, c0 := time.Now(), cpuTime(0)
	var transfer, cpu time.Duration
	go func() {
		var err error
		got, err = t.Fetch(ctx, n)
		transfer, cpu = time.Since(t0), cpuTime(0)-c0
		gs = gsEnd()
		if schedEnd != nil {
			sa = schedEnd()
		}
		if err == nil && got != n {
			err = fmt.Errorf("fetched %d of %d bytes", got, n)
		}
		close(stop)
		fetched <- err
	}()
	r := &holRun{BusyStart: time.Now().UnixNano()}
	busy, perr := openLoop(ctx, t.Ping, pingInterval, 0, stop)
	if err := <-fetched; err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	if perr != nil {
		return nil, fmt.Errorf("during the transfer: %w", perr)
	}
	r.Idle, r.Busy, r.Transfer, r.Bytes, r.CPU, r.Sched, r.GoSched = idle, busy, transfer, got, cpu, sa, gs
	return r, nil
}

// quantile returns the q-quantile (nearest rank) of the latencies.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func lats(s []sample) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = x.Lat
	}
	slices.Sort(out)
	return out
}

// longestStall is the longest time, from the start of the phase to its
// last answer, during which no ping was answered: with a ping every 2 ms,
// ideally 2 ms.
func longestStall(s []sample) time.Duration {
	done := make([]time.Duration, len(s))
	for i, x := range s {
		done[i] = x.At + x.Lat
	}
	slices.Sort(done)
	var prev, worst time.Duration
	for _, d := range done {
		worst = max(worst, d-prev)
		prev = d
	}
	return worst
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
