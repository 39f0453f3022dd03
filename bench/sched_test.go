package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns this process's user+system CPU time, plus that of the
// process pid (a server subprocess) when pid is not 0.
func cpuTime(pid int) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	d := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if pid != 0 {
		d += procCPU(pid)
	}
	return d
}

// schedAccount is what kept the processes of a run from running during the
// transfer: the kernel's run delay (time runnable but waiting for a CPU,
// /proc/<pid>/task/*/schedstat, all threads) and involuntary context
// switches, and the client's garbage collections.
type schedAccount struct {
	ClientRunDelay, ServerRunDelay time.Duration
	ClientPreempted, ServerPreempt int64
	ClientGCs                      uint32
	ClientGCPause                  time.Duration
}

// procSched sums run delay and involuntary switches over pid's threads.
func procSched(pid int) (delay time.Duration, invol int64) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, t := range tasks {
		if b, err := os.ReadFile(t + "/schedstat"); err == nil {
			var run, wait, n int64
			if _, err := fmt.Sscan(string(b), &run, &wait, &n); err == nil {
				delay += time.Duration(wait)
			}
		}
		if f, err := os.Open(t + "/status"); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "nonvoluntary_ctxt_switches:"); ok {
					n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					invol += n
				}
			}
			f.Close()
		}
	}
	return delay, invol
}

// schedFrom starts a schedAccount of this process and server; the function
// it returns ends it.
func schedFrom(server int) func() *schedAccount {
	cd, ci := procSched(os.Getpid())
	sd, si := procSched(server)
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	return func() *schedAccount {
		cd1, ci1 := procSched(os.Getpid())
		sd1, si1 := procSched(server)
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		return &schedAccount{ClientRunDelay: cd1 - cd, ServerRunDelay: sd1 - sd, ClientPreempted: ci1 - ci, ServerPreempt: si1 - si,
			ClientGCs: m1.NumGC - m0.NumGC, ClientGCPause: time.Duration(m1.PauseTotalNs - m0.PauseTotalNs)}
	}
}

// report reports a (when measured) per second of the transfer d.
func (a *schedAccount) report(b *testing.B, d time.Duration) {
	if a == nil || d <= 0 {
		return
	}
	s := d.Seconds()
	b.ReportMetric(a.ClientRunDelay.Seconds()*1e3/s, "client-run-delay-ms/s")
	b.ReportMetric(a.ServerRunDelay.Seconds()*1e3/s, "server-run-delay-ms/s")
	b.ReportMetric(float64(a.ClientPreempted)/s, "client-invol-switch/s")
	b.ReportMetric(float64(a.ServerPreempt)/s, "server-invol-switch/s")
	b.ReportMetric(float64(a.ClientGCs)/s, "client-gc/s")
	b.ReportMetric(a.ClientGCPause.Seconds()*1e3/s, "client-gc-pause-ms/s")
}

// threadDelays returns the run delay of each of pid's threads so far
// (/proc/<pid>/task/<tid>/schedstat).
func threadDelays(pid int) map[int]time.Duration {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	out := make(map[int]time.Duration, len(tasks))
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue
		}
		var run, wait int64
		if _, err := fmt.Sscan(string(b), &run, &wait); err == nil {
			tid, _ := strconv.Atoi(t.Name())
			out[tid] = time.Duration(wait)
		}
	}
	return out
}

// maxThreadDelay is the largest run delay one thread accrued from a to b:
// a lower bound of the time the process, on one core, waited for it
// (threads of a process on one core overlap, so their sum overcounts).
func maxThreadDelay(a, b map[int]time.Duration) time.Duration {
	var m time.Duration
	for tid, d := range b {
		m = max(m, d-a[tid])
	}
	return m
}

// coreBusy returns the time each CPU has spent busy so far (/proc/stat:
// all but idle and iowait), by CPU number.
func coreBusy() map[int]time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	out := map[int]time.Duration{}
	for line := range bytes.Lines(b) {
		f := strings.Fields(string(line))
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil {
			continue
		}
		var busy int64
		for i, v := range f[1:9] {
			if i == 3 || i == 4 { // idle, iowait
				continue
			}
			t, _ := strconv.ParseInt(v, 10, 64)
			busy += t
		}
		out[n] = time.Duration(busy) * time.Second / 100 // USER_HZ
	}
	return out
}

// procCPU returns pid's user+system CPU time so far (/proc/<pid>/stat).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// reportOthers reports how much of each pinned core went to others than
// its role's process while the client ran (from t0, with core times c0
// and the server's CPU s0 then): the client's core 0 (its CPU time from
// its rusage, client) and the server's core 1.
func reportOthers(b *testing.B, t0 time.Time, c0 map[int]time.Duration, s0 time.Duration, server int, client time.Duration) {
	c1 := coreBusy()
	wall := time.Since(t0).Seconds()
	if c0 == nil || c1 == nil || wall <= 0 {
		return
	}
	b.ReportMetric(max(c1[0]-c0[0]-client, 0).Seconds()*1e3/wall, "client-core-others-ms/s")
	b.ReportMetric(max(c1[1]-c0[1]-(procCPU(server)-s0), 0).Seconds()*1e3/wall, "server-core-others-ms/s")
}

// goSched is what Go's scheduler measured of this process's goroutines
// over a span (runtime/metrics /sched/latencies:seconds: the time each
// goroutine spent runnable before it ran): how many waits, the 99th
// percentile and the largest (the upper bounds of their histogram
// buckets), and their sum (from the buckets' lower bounds: at least
// that). A goroutine waits there for a P that another goroutine holds
// (with GOMAXPROCS 1, a client pinned to one core: quic-go's connection
// loop while the packet-reading goroutine runs), or whose thread the
// kernel is not running.
type goSched struct {
	N          uint64
	P99, Max   time.Duration
	Sum        time.Duration
	GOMAXPROCS int
}

const schedLatencies = "/sched/latencies:seconds"

// goSchedFrom starts a goSched; the function it returns ends it.
func goSchedFrom() func() *goSched {
	s0 := []metrics.Sample{{Name: schedLatencies}}
	metrics.Read(s0)
	if s0[0].Value.Kind() != metrics.KindFloat64Histogram {
		return func() *goSched { return nil }
	}
	h0 := s0[0].Value.Float64Histogram()
	c0 := slices.Clone(h0.Counts)
	return func() *goSched {
		s1 := []metrics.Sample{{Name: schedLatencies}}
		metrics.Read(s1)
		h := s1[0].Value.Float64Histogram()
		g := &goSched{GOMAXPROCS: runtime.GOMAXPROCS(0)}
		counts := make([]uint64, len(h.Counts))
		for i, c := range h.Counts {
			counts[i] = c - c0[i]
			g.N += counts[i]
			if lo := h.Buckets[i]; counts[i] > 0 && !math.IsInf(lo, -1) {
				g.Sum += time.Duration(float64(counts[i]) * lo * 1e9)
			}
		}
		upper := func(i int) time.Duration {
			hi := h.Buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = h.Buckets[i]
			}
			return time.Duration(hi * 1e9)
		}
		var acc uint64
		for i, c := range counts {
			if c == 0 {
				continue
			}
			acc += c
			if g.P99 == 0 && float64(acc) >= 0.99*float64(g.N) {
				g.P99 = upper(i)
			}
			g.Max = upper(i)
		}
		return g
	}
}

// report reports g (when measured) over the transfer d.
func (g *goSched) report(b *testing.B, d time.Duration) {
	if g == nil || d <= 0 {
		return
	}
	b.ReportMetric(µs(g.P99), "go-runnable-p99-µs")
	b.ReportMetric(µs(g.Max), "go-runnable-max-µs")
	b.ReportMetric(g.Sum.Seconds()*1e3/d.Seconds(), "go-runnable-ms/s")
	b.ReportMetric(float64(g.GOMAXPROCS), "gomaxprocs")
}
