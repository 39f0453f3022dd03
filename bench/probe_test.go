package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
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

// timedQueues is one sample of sampleQueues.
type timedQueues struct {
	T int64 // Unix ns
	queues
	// ClientDelay and ServerDelay are the run delay of each thread of the
	// processes so far (threadDelays: time runnable but not running).
	ClientDelay, ServerDelay map[int]time.Duration
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
	return t, probeBetween(s0, s1, s2)
}

// probeBetween is a probe of the sockets opened between the three
// snapshots of this process's socket inodes: the server's between s0 and
// s1, the client's between s1 and s2.
func probeBetween(s0, s1, s2 map[uint64]bool) *udpProbe {
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
	return p
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
