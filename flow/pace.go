package flow

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// Pacing an execution stream's sender (Limits.StreamQueueDelay, spec §5,
// §8; docs/design.md "Pacing execution streams"). quic-go's congestion
// controller (Cubic) fills whatever queue the bottleneck has, and the
// receiver's autotuned window lets it: a large result then puts a full
// queue in front of every control frame (a ping's answer waited 86 ms on a
// 20 ms path). The writer of an execution stream therefore limits itself
// from the connection's RTT samples, as TCP Vegas and LEDBAT do: the
// queueing delay is the RTT above the path's minimum, and the window of
// bytes it sends per round trip grows while that delay is under a small
// target and shrinks when it is over. It needs no help from the receiver,
// so it works for any client, browsers included.
const (
	// paceChunk is the most a paced write hands quic-go at once
	// (paceLaw.chunk).
	paceChunk = 16 << 10
	// paceMinRTT: paths with a smaller minimum RTT (loopback, a LAN) are
	// not paced; their RTT samples are scheduling noise.
	paceMinRTT = time.Millisecond
	// paceMinTarget is the smallest queueing delay aimed at.
	paceMinTarget = 2 * time.Millisecond
	// paceInitWindow is the window a stream starts from (paceLaw's
	// startup grows it).
	paceInitWindow = 64 << 10
	// paceMinWindow is the smallest window, and paceMinRate the slowest
	// rate: a persistent delay the stream cannot remove (another flow's
	// queue, a longer route) slows it down but never stalls it.
	paceMinWindow = 16 << 10
	paceMinRate   = 128 << 10 // bytes/s
	// paceBurst is how far behind its schedule a sender may catch up at once.
	paceBurst = 2 * time.Millisecond
	// paceGain is the share of the gap to the target closed per round trip.
	paceGain = 0.25
)

// rttSample is what the law reads of the connection (quic.ConnectionStats).
type rttSample struct {
	min, latest time.Duration
}

// paceLaw is the control law: a window of bytes per round trip, sent at
// window / RTT. Once per round trip it compares the queueing delay (the
// smallest RTT sample of the round trip less the path's minimum) with the
// target: under half of it at the start, the window grows by half every other
// round trip (startup: each step is seen before the next), and is halved
// when the last four samples say the queue grows (HyStart's exit);
// afterwards it is multiplied by 1 + paceGain × (target − delay) / RTT,
// FAST TCP's update with "keep target × rate bytes queued" (a gain of 1/4
// damps the round trip of lag the queue answers with); a delay over twice
// the target takes a gain of 1, which is (minimum + target) / RTT. A
// window shrinks from what the round trip carried when that was less (a
// congestion window held it back), and does not grow when the stream used
// less than half of it (it wrote slower, or quic-go's congestion window
// held it back). It never goes under 0.8 × the fastest of the last ten
// round trips that kept the queue under half the target × the minimum
// RTT: about one BDP, where backing off only loses throughput.
type paceLaw struct {
	target    time.Duration // 0: a third of the minimum RTT, at least paceMinTarget
	window    float64       // bytes per round trip
	rtt       time.Duration // the last round trip's smallest sample
	startup   bool
	grew      bool             // the window grew in startup at the last round trip's end
	end       time.Time        // end of the current round trip
	minLatest time.Duration    // smallest sample in it
	samples   int              // samples in it
	recent    [4]time.Duration // the last samples
	used      float64          // bytes sent in it
	bw        [10]float64      // rates of the last round trips with a short queue
	round     int              // round trips ended
	at        time.Time        // when the next byte may go
}

func newPaceLaw(target time.Duration) paceLaw {
	return paceLaw{target: target, window: paceInitWindow, startup: true}
}

// targetFor returns the queueing delay aimed at on a path of minimum RTT base.
func (l *paceLaw) targetFor(base time.Duration) time.Duration {
	if l.target > 0 {
		return l.target
	}
	return max(base/3, paceMinTarget)
}

// active reports whether a path with sample s is paced.
func (l *paceLaw) active(s rttSample) bool { return s.min >= paceMinRTT }

// rate is the current sending rate, bytes/s.
func (l *paceLaw) rate() float64 {
	if l.rtt <= 0 {
		return float64(paceInitWindow) / paceMinRTT.Seconds()
	}
	return max(l.window/l.rtt.Seconds(), paceMinRate)
}

// chunk is the most the next write takes: a millisecond at the rate, from
// 4 KiB to paceChunk, so that a write is no burst the queue notices.
func (l *paceLaw) chunk() int {
	return int(min(max(l.rate()/1000, 4<<10), paceChunk))
}

// observe takes sample s at now, and ends the round trip when it is over.
func (l *paceLaw) observe(now time.Time, s rttSample) {
	if s.latest > 0 && (l.minLatest == 0 || s.latest < l.minLatest) {
		l.minLatest = s.latest
	}
	l.recent[l.samples%len(l.recent)] = s.latest
	l.samples++
	if l.startup && l.samples >= len(l.recent) && slices.Min(l.recent[:])-s.min >= l.targetFor(s.min)/2 {
		// The queue grows: the window that started it was the last one,
		// and the signal comes a round trip late (HyStart's exit).
		l.startup = false
		l.window = max(l.window/2, paceMinWindow)
	}
	if l.end.IsZero() {
		// A law that starts from a memo keeps the round trip newPacer
		// gave it.
		l.rtt = max(s.latest, s.min, l.rtt)
		l.end = now.Add(l.rtt)
		return
	}
	if now.Before(l.end) {
		return
	}
	elapsed := now.Sub(l.end.Add(-l.rtt))
	base := s.min
	rtt := max(l.minLatest, base)
	qd := rtt - base
	target := l.targetFor(base)
	// sent is what the round trip carried, scaled to one round trip.
	sent := l.used * rtt.Seconds() / max(elapsed, time.Microsecond).Seconds()
	limited := sent < l.window/2
	if l.startup && qd < target/2 {
		// Every other round trip: the samples of a round trip are those
		// of the one before, so each step is seen before the next.
		if !limited && !l.grew {
			l.window *= 1.5
			l.grew = true
		} else {
			l.grew = false
		}
	} else {
		l.startup = false
		gain := paceGain
		if qd > 2*target {
			gain = 1
		}
		f := 1 + gain*(target-qd).Seconds()/rtt.Seconds()
		switch {
		case f < 1:
			l.window = min(l.window, sent) * max(f, 0.5)
		case !limited:
			l.window *= f
		}
	}
	// The floor: a round trip with the queue under half its target sent
	// at about the link's rate at most, so 0.8 times the largest such
	// rate of the last ten, times the minimum RTT, is under one BDP,
	// which leaves the queue empty; below it, a delay that is no queue (a
	// late relay, a slow scheduler) would only cost throughput.
	if qd < target/2 && !limited {
		l.bw[l.round%len(l.bw)] = sent / rtt.Seconds()
	} else {
		l.bw[l.round%len(l.bw)] = 0
	}
	l.round++
	l.window = max(l.window, paceMinWindow, 0.8*slices.Max(l.bw[:])*base.Seconds())
	l.rtt = rtt
	l.end = now.Add(rtt)
	l.minLatest, l.used, l.samples = 0, 0, 0
}

// delay returns how long n bytes wait at now, and books them.
func (l *paceLaw) delay(now time.Time, n int) time.Duration {
	if l.at.Before(now.Add(-paceBurst)) {
		l.at = now.Add(-paceBurst)
	}
	d := max(l.at.Sub(now), 0)
	l.at = l.at.Add(time.Duration(float64(n) / l.rate() * float64(time.Second)))
	l.used += float64(n)
	return d
}

// pacer paces one execution stream's writes with a paceLaw fed by its
// connection's statistics.
type pacer struct {
	stats func() rttSample
	law   paceLaw
	timer *time.Timer
	// memo is the session's memory of the path (nil: none): the law's
	// window and rates at the end of each round trip after startup, from
	// which the session's next stream starts.
	memo  *atomic.Pointer[paceMemo]
	round int // the law's round when memo was last written
}

// paceMemo is what a stream's law learnt of the path: a stream that
// starts from it skips startup, so that each result of a session does not
// climb from paceInitWindow again (on a 50 ms path that is a dozen round
// trips before 1 MiB is under way), and the delay-based update corrects
// it within a round trip or two if streams now share the path.
type paceMemo struct {
	window float64
	rtt    time.Duration // the round trip the window was sent in
	bw     [10]float64
}

// newPacer returns the pacer of an execution stream on s, or nil when s's
// limits turn pacing off or s has no QUIC connection to read.
func (s *Session) newPacer() *pacer {
	if s.lim.StreamQueueDelay < 0 {
		return nil
	}
	var c *quic.Conn
	if k := s.conn.Load(); k != nil {
		c = k.conn
	}
	var memo *atomic.Pointer[paceMemo]
	if s.end != nil {
		c, memo = s.end.conn, &s.end.paced
	}
	if c == nil {
		return nil
	}
	return newPacer(s.lim.StreamQueueDelay, func() rttSample { return connSample(c) }, memo)
}

// newPacer returns a pacer aiming at target with stats, starting from
// memo's path when it has one and keeping it up to date (memo nil: none).
func newPacer(target time.Duration, stats func() rttSample, memo *atomic.Pointer[paceMemo]) *pacer {
	p := &pacer{stats: stats, law: newPaceLaw(target), memo: memo}
	if memo != nil {
		if m := memo.Load(); m != nil {
			p.law.window, p.law.rtt, p.law.bw, p.law.startup = m.window, m.rtt, m.bw, false
			// The memo's window was sent in a round trip that held the
			// queue the law aims at; the new stream starts on an empty
			// one, so it sends the same rate: the window of the path's
			// minimum RTT, and the update fills the queue to its target.
			if st := stats(); st.min > 0 && m.rtt > st.min {
				p.law.window = max(m.window*st.min.Seconds()/m.rtt.Seconds(), paceMinWindow)
				p.law.rtt = st.min
			}
		}
	}
	return p
}

// remember writes the law's path into the memo once per round trip, once
// startup is over.
func (p *pacer) remember() {
	if p.memo == nil || p.law.startup || p.law.round == p.round {
		return
	}
	p.round = p.law.round
	p.memo.Store(&paceMemo{window: p.law.window, rtt: p.law.rtt, bw: p.law.bw})
}

func connSample(c *quic.Conn) rttSample {
	st := c.ConnectionStats()
	return rttSample{min: st.MinRTT, latest: st.LatestRTT}
}

// next returns how much of n bytes the next write may take (all of them
// when the path is not paced, else a chunk of the law's), once it may go:
// it waits for the stream's schedule, or until ctx ends (then it returns
// ctx's error with the chunk). The wait is bounded: the chunk /
// paceMinRate past the schedule at most. It reads the connection's
// statistics once.
func (p *pacer) next(ctx context.Context, n int) (int, error) {
	if p == nil {
		return n, nil
	}
	s := p.stats()
	if !p.law.active(s) {
		return n, nil
	}
	now := time.Now()
	p.law.observe(now, s)
	p.remember()
	c := min(n, p.law.chunk())
	d := p.law.delay(now, c)
	if d <= 0 {
		return c, nil
	}
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-p.timer.C:
		return c, nil
	case <-ctx.Done():
		p.timer.Stop()
		return c, ctx.Err()
	}
}
