package flow

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// fluidLink is a deterministic model of a bottleneck for the pacing law
// (spec §5.4, pace.go): a rate, a round trip split evenly, and a drop-tail
// queue of one bandwidth-delay product, fed by a sender that nothing but
// the law holds back (the worst case: quic-go's congestion window would
// fill any queue), with quic-go's pacer spreading each write. RTT samples
// carry up to jitter of noise.
type fluidLink struct {
	rate   float64 // bytes/s
	base   time.Duration
	jitter time.Duration
}

// simResult is what a run of a fluidLink measured after its warm-up.
type simResult struct {
	util            float64       // delivered / rate
	maxDelay        time.Duration // the queue's longest delay
	meanDelay       time.Duration
	drops           float64 // bytes the full queue dropped
	startDrops      float64 // in the warm-up
	startWin, endWn float64
}

// run sends through l for d with law (nil: unpaced), in steps of 100 µs,
// and measures after warm.
func (l fluidLink) run(law *paceLaw, d, warm time.Duration) simResult {
	const step = 100 * time.Microsecond
	limit := l.rate * l.base.Seconds() // one BDP
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Unix(1000, 0)
	hist := make([]time.Duration, 0, int(d/step)+1) // queueing delay at each step
	var q, buf, delivered, drops, sumDelay float64
	var maxDelay time.Duration
	var next time.Time // when the pending chunk goes
	pending := 0
	var r simResult
	n := 0
	for now := t0; now.Sub(t0) < d; now = now.Add(step) {
		// The sample an ACK brings now: the delay the queue had half a
		// round trip ago, plus noise.
		k := len(hist) - int(l.base/2/step)
		var qd time.Duration
		if k >= 0 && len(hist) > 0 {
			qd = hist[k]
		}
		sample := rttSample{min: l.base, latest: l.base + qd + time.Duration(rng.Int64N(int64(l.jitter)+1))}
		if law == nil {
			q += l.rate * step.Seconds() * 4 // a sender four times the link
		} else {
			law.observe(now, sample)
			for !now.Before(next) {
				buf += float64(pending)
				pending = law.chunk()
				next = now.Add(law.delay(now, pending))
			}
			// quic-go's pacer spreads what it is given: at 1.25 times
			// the rate (its own: 1.25 × cwnd / RTT).
			out := min(buf, 1.25*law.rate()*step.Seconds())
			buf -= out
			q += out
		}
		if q > limit {
			if now.Sub(t0) >= warm {
				drops += q - limit
			} else {
				r.startDrops += q - limit
			}
			q = limit
		}
		out := min(q, l.rate*step.Seconds())
		q -= out
		delay := time.Duration(q / l.rate * float64(time.Second))
		hist = append(hist, delay)
		if now.Sub(t0) == warm && law != nil {
			r.startWin = law.window
		}
		if now.Sub(t0) >= warm {
			delivered += out
			sumDelay += delay.Seconds()
			maxDelay = max(maxDelay, delay)
			n++
		}
	}
	r.util = delivered / (l.rate * (d - warm).Seconds())
	r.maxDelay, r.drops = maxDelay, drops
	r.meanDelay = time.Duration(sumDelay / float64(n) * float64(time.Second))
	if law != nil {
		r.endWn = law.window
	}
	return r
}

// TestPaceLaw: on the shaped links of BenchmarkShapedLink (100 Mbit/s and
// 20 ms; 20 Mbit/s and 50 ms; each with a one-BDP queue), a shorter one
// and a long fat one, the law fills the link (≥ 90 %) and keeps the queue's delay near
// its target (mean within 2 × target, max within 4 ×) once started, and
// the queue drops next to nothing (under 0.01 % of what the link carries),
// its start included; an unpaced sender fills and overflows the queue.
func TestPaceLaw(t *testing.T) {
	for _, c := range []struct {
		name string
		link fluidLink
	}{
		{"100mbit-20ms", fluidLink{rate: 100e6 / 8, base: 20 * time.Millisecond, jitter: time.Millisecond}},
		{"20mbit-50ms", fluidLink{rate: 20e6 / 8, base: 50 * time.Millisecond, jitter: time.Millisecond}},
		{"1gbit-80ms", fluidLink{rate: 1e9 / 8, base: 80 * time.Millisecond, jitter: 2 * time.Millisecond}},
		{"100mbit-10ms", fluidLink{rate: 100e6 / 8, base: 10 * time.Millisecond, jitter: 500 * time.Microsecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			law := newPaceLaw(0)
			target := law.targetFor(c.link.base)
			r := c.link.run(&law, 8*time.Second, 2*time.Second)
			t.Logf("paced: util %.3f, queue delay mean %v max %v, drops %.0f B (warm-up %.0f B), window %.0f → %.0f (BDP %.0f), target %v",
				r.util, r.meanDelay, r.maxDelay, r.drops, r.startDrops, r.startWin, r.endWn, c.link.rate*c.link.base.Seconds(), target)
			carried := c.link.rate * 8 // bytes at most, in the 8 s
			if r.util < 0.9 || r.meanDelay > 2*target || r.maxDelay > 4*target || r.drops+r.startDrops > carried/1e4 {
				t.Errorf("paced: utilization %.3f (want ≥ 0.9), queue delay mean %v max %v (target %v: want ≤ 2×, ≤ 4×), %.0f bytes dropped, %.0f in the start (want under 0.01 %%: %.0f)",
					r.util, r.meanDelay, r.maxDelay, target, r.drops, r.startDrops, carried/1e4)
			}
			all := c.link.run(new(newPaceLaw(0)), 5*time.Second, 0)
			t.Logf("from the start (5 s): util %.3f", all.util)
			u := c.link.run(nil, 8*time.Second, 2*time.Second)
			if u.maxDelay <= 4*target && u.drops == 0 {
				t.Errorf("unpaced: queue delay max %v, %.0f bytes dropped: the model does not overflow its queue", u.maxDelay, u.drops)
			}
		})
	}
}

// TestPaceLawLoopback: a path under paceMinRTT is not paced, whatever its
// samples say (loopback's RTT is scheduling noise).
func TestPaceLawLoopback(t *testing.T) {
	p := newPacer(0, func() rttSample { return rttSample{min: 200 * time.Microsecond, latest: 50 * time.Millisecond} }, nil)
	for range 1000 {
		c, err := p.next(context.Background(), 1<<20)
		if err != nil || c != 1<<20 {
			t.Fatalf("next on loopback: %d, %v; want the whole write (1 MiB) at once", c, err)
		}
	}
	if !p.law.at.IsZero() {
		t.Errorf("loopback writes were booked on the schedule")
	}
}

// TestPaceNeverStalls: however bad the samples (a queueing delay of
// seconds, a minimum RTT of a second, a zero latest RTT), the law's rate
// stays at paceMinRate or more, each chunk's wait is bounded by
// paceChunk/paceMinRate, and a paced stream ends when its context does.
// The waits are the pacer's timers: the test waits on them, bounded by a
// context.
func TestPaceNeverStalls(t *testing.T) {
	bound := time.Duration(float64(paceChunk) / paceMinRate * float64(time.Second))
	for _, s := range []rttSample{
		{min: 20 * time.Millisecond, latest: 10 * time.Second},
		{min: time.Second, latest: time.Minute},
		{min: 2 * time.Millisecond, latest: 0},
		{min: time.Hour, latest: time.Hour},
	} {
		law := newPaceLaw(0)
		now := time.Unix(0, 0)
		for i := range 2000 {
			law.observe(now, s)
			if r := law.rate(); r < paceMinRate {
				t.Fatalf("%+v, step %d: rate %.0f B/s under paceMinRate", s, i, r)
			}
			d := law.delay(now, paceChunk)
			if d > bound {
				t.Fatalf("%+v, step %d: a chunk waits %v, over %v", s, i, d, bound)
			}
			now = now.Add(d)
		}
	}

	// A real pacer under a delay it cannot remove: 64 KiB within the
	// bound of each chunk, and a wait cut short by its context.
	p := newPacer(0, func() rttSample { return rttSample{min: 20 * time.Millisecond, latest: 20 * time.Second} }, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 16*bound+time.Second)
	defer cancel()
	for sent := 0; sent < 64<<10; {
		c, err := p.next(ctx, 64<<10-sent)
		if err != nil {
			t.Fatalf("after %d bytes: %v (stalled)", sent, err)
		}
		if c <= 0 || c > paceChunk {
			t.Fatalf("chunk %d, want (0, %d]", c, paceChunk)
		}
		sent += c
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	for i := 0; ; i++ { // the schedule is ahead now: a wait that ends with done
		if _, err := p.next(done, paceChunk); err != nil {
			break
		}
		if i > 100 {
			t.Fatal("no wait ended with its cancelled context")
		}
	}
}

// TestPaceMemo: the session's next stream starts from what the last one
// learnt of the path (paceMemo) instead of climbing from paceInitWindow
// again: in its first second on a 1 Gbit/s, 80 ms link it carries
// most of the link, where a stream with no memory carries far less, and
// the queue stays within the law's bounds all the same. A stream still in
// startup leaves no memo.
func TestPaceMemo(t *testing.T) {
	link := fluidLink{rate: 1e9 / 8, base: 80 * time.Millisecond, jitter: 2 * time.Millisecond}
	var memo atomic.Pointer[paceMemo]
	first := newPacer(0, func() rttSample { return rttSample{min: link.base, latest: link.base} }, &memo)
	first.remember()
	if memo.Load() != nil {
		t.Fatal("a stream in startup left a memo")
	}
	link.run(&first.law, 8*time.Second, 2*time.Second)
	first.remember()
	m := memo.Load()
	if m == nil || m.window != first.law.window {
		t.Fatalf("memo %+v after a stream's steady state, want its window %.0f", m, first.law.window)
	}
	next := newPacer(0, func() rttSample { return rttSample{min: link.base, latest: link.base} }, &memo)
	// It sends at the rate the memo's window had in its round trip, from
	// the path's minimum RTT (the queue is empty at its start).
	if want := m.window * link.base.Seconds() / m.rtt.Seconds(); next.law.startup || next.law.window != want || next.law.rtt != link.base {
		t.Fatalf("the next stream starts in startup %v with window %.0f and RTT %v, want %.0f and %v out of startup", next.law.startup, next.law.window, next.law.rtt, want, link.base)
	}
	warm := link.run(&next.law, time.Second, 0)
	cold := link.run(new(newPaceLaw(0)), time.Second, 0)
	target := next.law.targetFor(link.base)
	t.Logf("first second: util %.3f from the memo, %.3f without; queue delay mean %v max %v", warm.util, cold.util, warm.meanDelay, warm.maxDelay)
	if warm.util < 0.8 || warm.util < cold.util+0.2 {
		t.Errorf("first second's utilization %.3f from the memo (%.3f without): want ≥ 0.8 and well over a fresh stream's", warm.util, cold.util)
	}
	if warm.meanDelay > 2*target || warm.maxDelay > 4*target || warm.drops > 0 {
		t.Errorf("from the memo: queue delay mean %v max %v, %.0f bytes dropped (target %v)", warm.meanDelay, warm.maxDelay, warm.drops, target)
	}
}
