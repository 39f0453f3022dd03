package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
)

// queues is what the kernel holds in the UDP sockets of both ends at one
// moment (/proc/net/udp: rx_queue and tx_queue are the sockets' buffer
// memory in use, sk_rmem_alloc and sk_wmem_alloc, so a datagram counts
// with its kernel overhead), and the datagrams they have dropped so far.
type queues struct {
	ClientRx, ClientTx, ServerRx, ServerTx int64
	Drops                                  int64
}

// udpProbe reads the UDP socket queues of a client and a server process
// from /proc/net/udp and /proc/net/udp6, finding their sockets by inode
// (/proc/<pid>/fd).
type udpProbe struct {
	server map[uint64]bool // inode → the server's (else the client's)
}

// newUDPProbe finds the UDP sockets that client and server hold open now.
func newUDPProbe(client, server int) (*udpProbe, error) {
	p := &udpProbe{server: map[uint64]bool{}}
	for _, pid := range []int{client, server} {
		inodes, err := socketInodes(pid)
		if err != nil {
			return nil, err
		}
		for ino := range inodes {
			p.server[ino] = pid == server
		}
	}
	return p, nil
}

// read returns the queues now.
func (p *udpProbe) read() *queues {
	q := &queues{}
	for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range bytes.Lines(b) {
			// sl local rem st tx_queue:rx_queue tr:tm retrnsmt uid timeout inode ref pointer drops
			fs := strings.Fields(string(line))
			if len(fs) < 13 {
				continue
			}
			ino, err := strconv.ParseUint(fs[9], 10, 64)
			if err != nil {
				continue
			}
			srv, ok := p.server[ino]
			if !ok {
				continue
			}
			txs, rxs, _ := strings.Cut(fs[4], ":")
			tx, _ := strconv.ParseInt(txs, 16, 64)
			rx, _ := strconv.ParseInt(rxs, 16, 64)
			drops, _ := strconv.ParseInt(fs[12], 10, 64)
			q.Drops += drops
			if srv {
				q.ServerRx += rx
				q.ServerTx += tx
			} else {
				q.ClientRx += rx
				q.ClientTx += tx
			}
		}
	}
	return q
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

// timedQueues is one sample of sampleQueues.
type timedQueues struct {
	T int64 // Unix ns
	queues
	// ClientDelay and ServerDelay are the run delay of each thread of the
	// processes so far (threadDelays: time runnable but not running).
	ClientDelay, ServerDelay map[int]time.Duration
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

// queueEvery is how often sampleQueues samples. A sample reads
// /proc/net/udp{,6} and every thread's schedstat of both processes, which
// costs the benchmark's process CPU (every 5 ms, 17-23 % of a core on the
// benchmark machine): the run reports it (sampler-cpu).
const queueEvery = 10 * time.Millisecond

// sampleQueues samples the UDP queues of client and server every
// queueEvery until stop closes (finding the client's sockets again every
// 50 samples: it dials after it starts).
func sampleQueues(client, server int, stop <-chan struct{}) []timedQueues {
	var out []timedQueues
	tk := time.NewTicker(queueEvery)
	defer tk.Stop()
	var p *udpProbe
	for i := 0; ; i++ {
		select {
		case <-stop:
			return out
		case <-tk.C:
		}
		if i%50 == 0 {
			if np, err := newUDPProbe(client, server); err == nil {
				p = np
			}
		}
		if p != nil {
			out = append(out, timedQueues{time.Now().UnixNano(), *p.read(), threadDelays(client), threadDelays(server)})
		}
	}
}

// reportQueues reports, when the UDP queues were sampled (sampleQueues),
// the client's UDP receive queue during the busy phase (median and max of
// the samples), the largest it was during each of the slowest 1 % of the
// busy pings (mean, and as a wait at the transfer's rate: what is ahead of
// a ping's answer that arrives then), the correlation between the largest
// queue during a ping and its latency, the server's largest send and
// receive queues, and the datagrams both sockets dropped.
func (r *holRun) reportQueues(b *testing.B) {
	if len(r.Busy) == 0 {
		return
	}
	end := r.BusyStart + int64(r.Busy[len(r.Busy)-1].At+r.Busy[len(r.Busy)-1].Lat)
	var qs []timedQueues
	for _, q := range r.Queues {
		if q.T >= r.BusyStart && q.T <= end {
			qs = append(qs, q)
		}
	}
	if len(qs) < 2 {
		return
	}
	rx := make([]float64, len(qs))
	var srx, stx int64
	for i, q := range qs {
		rx[i] = float64(q.ClientRx)
		srx, stx = max(srx, q.ServerRx), max(stx, q.ServerTx)
	}
	slices.Sort(rx)
	b.ReportMetric(rx[len(rx)/2]/1024, "rxq-p50-KiB")
	b.ReportMetric(rx[len(rx)-1]/1024, "rxq-max-KiB")
	b.ReportMetric(float64(srx)/1024, "srv-rxq-max-KiB")
	b.ReportMetric(float64(stx)/1024, "srv-txq-max-KiB")
	b.ReportMetric(float64(qs[len(qs)-1].Drops-qs[0].Drops), "udp-drops")
	// The largest client receive queue during each ping's life, and the
	// run delay each process accrued during it (between the samples
	// around it).
	during := make([]float64, len(r.Busy))
	lat := make([]float64, len(r.Busy))
	cdel := make([]time.Duration, len(r.Busy))
	sdel := make([]time.Duration, len(r.Busy))
	for i, s := range r.Busy {
		from, to := r.BusyStart+int64(s.At), r.BusyStart+int64(s.At+s.Lat)
		k, _ := slices.BinarySearchFunc(qs, from, func(q timedQueues, t int64) int { return int(q.T - t) })
		k0 := max(k-1, 0)
		for ; k < len(qs) && qs[k].T <= to; k++ {
			during[i] = max(during[i], float64(qs[k].ClientRx))
		}
		k1 := min(k, len(qs)-1)
		cdel[i] = maxThreadDelay(qs[k0].ClientDelay, qs[k1].ClientDelay)
		sdel[i] = maxThreadDelay(qs[k0].ServerDelay, qs[k1].ServerDelay)
		lat[i] = float64(s.Lat)
	}
	b.ReportMetric(pearson(during, lat), "rxq-lat-corr")
	idx := make([]int, len(r.Busy))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return int(r.Busy[b].Lat - r.Busy[a].Lat) })
	slow := idx[:max(1, len(idx)/100)]
	var sum float64
	for _, i := range slow {
		sum += during[i]
	}
	slowRx := sum / float64(len(slow))
	var slowLat, slowC, slowS time.Duration
	for _, i := range slow {
		slowLat += r.Busy[i].Lat
		slowC += cdel[i]
		slowS += sdel[i]
	}
	k := time.Duration(len(slow))
	b.ReportMetric(float64((slowLat/k).Microseconds())/1e3, "slow-lat-ms")
	if r.OneProcess {
		b.ReportMetric(float64((slowC/k).Microseconds())/1e3, "slow-thread-delay-ms")
	} else {
		b.ReportMetric(float64((slowC/k).Microseconds())/1e3, "slow-client-thread-delay-ms")
		b.ReportMetric(float64((slowS/k).Microseconds())/1e3, "slow-server-thread-delay-ms")
	}
	b.ReportMetric(slowRx/1024, "rxq-slow-KiB")
	if rate := float64(r.Bytes) / r.Transfer.Seconds(); rate > 0 {
		b.ReportMetric(slowRx/rate*1e3, "rxq-slow-wait-ms")
	}
}

// pearson is the correlation coefficient of x and y (0 when either is
// constant).
func pearson(x, y []float64) float64 {
	n := float64(len(x))
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
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
	return time.Duration(ut+st) * time.Second / 100
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

// socketInodes returns the inodes of the sockets pid holds open now.
func socketInodes(pid int) (map[uint64]bool, error) {
	out := map[uint64]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil {
			continue
		}
		if s, ok := strings.CutPrefix(l, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				out[ino] = true
			}
		}
	}
	return out, nil
}

// dialProbed starts a flow server and dials it with cbor and the client
// limits lim, both in this process, and returns the client with a probe
// of their UDP sockets: the sockets the server opened (its listener) and
// those the dial opened (the client's).
func dialProbed(b testing.TB, lim flow.Limits) (*flowTarget, *udpProbe) {
	s0, _ := socketInodes(os.Getpid())
	srv := flowServer(b)
	s1, _ := socketInodes(os.Getpid())
	t := dialFlowLimits(b, srv, codec.CBOR, lim)
	s2, _ := socketInodes(os.Getpid())
	p := &udpProbe{server: map[uint64]bool{}}
	for ino := range s1 {
		if !s0[ino] {
			p.server[ino] = true
		}
	}
	for ino := range s2 {
		if !s1[ino] {
			p.server[ino] = false
		}
	}
	return t, p
}

// sampleSelf samples p's UDP queues and the run delay of each of this
// process's threads every queueEvery until stop closes (both ends in this
// process: the samples' ClientDelay is this process's, ServerDelay nil),
// and returns the samples with the wall time the sampling itself took.
func sampleSelf(p *udpProbe, stop <-chan struct{}) ([]timedQueues, time.Duration) {
	var out []timedQueues
	var spent time.Duration
	tk := time.NewTicker(queueEvery)
	defer tk.Stop()
	for {
		select {
		case <-stop:
			return out, spent
		case <-tk.C:
		}
		t0 := time.Now()
		out = append(out, timedQueues{t0.UnixNano(), *p.read(), threadDelays(os.Getpid()), nil})
		spent += time.Since(t0)
	}
}

// runHOLProbed is runHOL for a client and server in this process whose
// UDP sockets p finds: it samples their queues and this process's
// threads' run delay during the run (sampleSelf) and reports, beside
// what runHOL's report does, the time the sampling took per second
// (sampler-ms/s: it shares the process with both ends) and the CPU other
// processes used on the machine (others-cpu).
func runHOLProbed(ctx context.Context, b *testing.B, t mcpTarget, n int64, p *udpProbe) (*holRun, error) {
	stop := make(chan struct{})
	type sampled struct {
		qs    []timedQueues
		spent time.Duration
	}
	done := make(chan sampled)
	go func() {
		qs, spent := sampleSelf(p, stop)
		done <- sampled{qs, spent}
	}()
	t0, c0, cores0 := time.Now(), cpuTime(0), coreBusy()
	r, err := runHOL(ctx, t, n)
	close(stop)
	s := <-done
	if err != nil {
		return nil, err
	}
	reportMachineOthers(b, t0, cores0, cpuTime(0)-c0)
	b.ReportMetric(s.spent.Seconds()*1e3/time.Since(t0).Seconds(), "sampler-ms/s")
	r.Queues, r.OneProcess = s.qs, true
	return r, nil
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
