package flow

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeClock is a clock whose time moves only when advance says so; its
// timers fire in advance, on the caller's goroutine, in time order.
type fakeClock struct {
	start, now time.Time
	timers     []*fakeTimer
}

type fakeTimer struct {
	c  *fakeClock
	at time.Time
	f  func()
	on bool
}

func newFakeClock() *fakeClock {
	t := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	return &fakeClock{start: t, now: t}
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) AfterFunc(d time.Duration, f func()) clockTimer {
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f, on: true}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool { was := t.on; t.on = false; return was }

func (t *fakeTimer) Reset(d time.Duration) bool {
	was := t.on
	t.at, t.on = t.c.now.Add(d), true
	return was
}

// advance moves the time on by d, firing the timers due on the way. It
// reports false if the timers kept firing without the time moving on (a
// timer that sets itself for a time already past, again and again).
func (c *fakeClock) advance(d time.Duration) bool {
	end := c.now.Add(d)
	for fired := 0; ; fired++ {
		if fired == 1000 {
			return false
		}
		var next *fakeTimer
		for _, t := range c.timers {
			if t.on && !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			break
		}
		if next.at.After(c.now) {
			c.now = next.at
		}
		next.on = false
		next.f()
	}
	c.now = end
	return true
}

// live counts the timers set and not fired or stopped.
func (c *fakeClock) live() int {
	n := 0
	for _, t := range c.timers {
		if t.on {
			n++
		}
	}
	return n
}

// drainRig drives a drain as its session does (drain.go's Session side:
// the steps of maybeFinish, drainFired and drainDo) on fake time, and logs
// what the drain asks, with the time it asks it.
type drainRig struct {
	clk       *fakeClock
	d         *drain
	own, work int  // our calls; all that is in flight, ours included
	noControl bool // an announce finds no control stream (errNoControl)
	log       []string
}

func newDrainRig() *drainRig {
	r := &drainRig{clk: newFakeClock(), d: &drain{}}
	r.d.init(r.clk, Limits{ShutdownGrace: 50 * time.Millisecond, PeerFINWait: 250 * time.Millisecond, DrainTimeout: time.Second}, r.fired)
	return r
}

func (r *drainRig) note(format string, args ...any) {
	r.log = append(r.log, r.clk.now.Sub(r.clk.start).String()+" "+fmt.Sprintf(format, args...))
}

// maybeFinish is Session.maybeFinish's loop.
func (r *drainRig) maybeFinish() {
	for {
		st := r.d.next(r.own, r.work)
		switch st.act {
		case drainNone:
			return
		case drainAnnounce:
			if r.noControl {
				r.note("announce %s (no control stream)", st.notice.Reason)
				r.d.announced(st.notice, true)
				return
			}
			r.note("announce %s", st.notice.Reason)
			r.d.announced(st.notice, false)
		case drainFIN:
			if !r.d.fin(r.work) {
				return
			}
			r.note("fin")
		default:
			r.do(st)
			return
		}
	}
}

func (r *drainRig) fired() { r.do(r.d.fired()) }

// do is Session.drainDo; the session's close ends the drain.
func (r *drainRig) do(st drainStep) {
	switch st.act {
	case drainClose:
		r.note("close: %s", st.why)
		r.d.end()
	case drainCutOff:
		r.note("cut off")
		r.d.end()
	case drainAdvance:
		r.maybeFinish()
	}
}

// run does one step of a script (see TestDrainTransitions).
func (r *drainRig) run(t *testing.T, step string) {
	verb, arg, _ := strings.Cut(step, " ")
	switch verb {
	case "shutdown":
		r.d.shutdown(arg)
		r.maybeFinish()
	case "peer-shutdown":
		r.d.noteRead() // its frame, as readLoop notes every frame
		r.d.peerShutdown(arg)
		r.maybeFinish()
	case "peer-fin":
		r.d.readFIN()
		r.maybeFinish()
	case "read":
		r.d.noteRead()
	case "call":
		r.own++
		r.work++
	case "answered":
		r.own--
		r.work--
		r.maybeFinish()
	case "request":
		r.work++
	case "answer":
		r.work--
		r.maybeFinish()
	case "no-control":
		r.noControl = true
	case "control":
		r.noControl = false
		r.maybeFinish()
	case "end":
		r.d.end()
		if n := r.clk.live(); n > 0 {
			t.Errorf("the session's end left %d timers of the drain set", n)
		}
	case "wait":
		d, err := time.ParseDuration(arg)
		if err != nil {
			t.Fatalf("step %q: %v", step, err)
		}
		r.advance(t, d)
	case "phase?":
		r.note("%v refusing=%v", r.d.phase, r.d.refusing())
	case "in-force?":
		select {
		case <-r.d.draining():
			r.note("in force")
		default:
			r.note("not in force")
		}
	case "reason?":
		r.note("peer's reason %q", r.d.peerReason)
	default:
		t.Fatalf("unknown step %q", step)
	}
	r.advance(t, 0) // a timer set for now fires now
}

func (r *drainRig) advance(t *testing.T, d time.Duration) {
	if !r.clk.advance(d) {
		t.Fatalf("at %v the drain's timer fired 1000 times and the time did not move on; log so far %q", r.clk.now.Sub(r.clk.start), r.log)
	}
}

// TestDrainTransitions: the drain (spec §7.2) on fake time, every
// transition of drain's phases and every event in the orders that race
// on a real session. Limits: grace 50 ms, PeerFINWait 250 ms, deadline
// 1 s. Each script's log is what the drain asked for, and when; once the
// drain has ended, no timer of it is left set.
func TestDrainTransitions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script []string
		want   []string
	}{
		{"sender: announce, grace, FIN, the peer's FIN, no close from the peer",
			[]string{"shutdown bye", "phase?", "wait 49ms", "phase?", "wait 1ms", "phase?", "peer-fin", "wait 249ms", "wait 1ms"},
			[]string{"0s announce bye", "0s grace refusing=true", "49ms grace refusing=true", "50ms fin",
				"50ms finished refusing=true", "300ms close: shutdown complete; the peer did not close the session"}},
		{"sender: the peer closes the session",
			[]string{"shutdown bye", "wait 50ms", "peer-fin", "wait 10ms", "end", "wait 5s"},
			[]string{"0s announce bye", "50ms fin"}},
		{"sender: a frame read in the grace moves it on",
			[]string{"shutdown bye", "wait 30ms", "read", "wait 30ms", "phase?", "wait 20ms"},
			[]string{"0s announce bye", "60ms grace refusing=true", "80ms fin"}},
		{"sender: a ping of ours in the grace sends it back to draining",
			[]string{"shutdown bye", "wait 20ms", "call", "wait 40ms", "phase?", "wait 60ms", "read", "answered", "phase?", "wait 50ms"},
			[]string{"0s announce bye", "60ms draining refusing=true", "120ms grace refusing=true", "170ms fin"}},
		{"sender: $/shutdown held for our calls",
			[]string{"call", "shutdown bye", "phase?", "in-force?", "wait 100ms", "read", "answered", "wait 50ms"},
			[]string{"0s draining refusing=true", "0s in force", "100ms announce bye", "150ms fin"}},
		{"sender: no control stream yet",
			[]string{"no-control", "shutdown bye", "in-force?", "wait 100ms", "phase?", "control", "wait 50ms"},
			[]string{"0s announce bye (no control stream)", "0s in force", "100ms draining refusing=true", "100ms announce bye", "150ms fin"}},
		{"receiver: FIN at once, then the peer's FIN closes",
			[]string{"peer-shutdown done", "in-force?", "wait 10ms", "peer-fin", "reason?"},
			[]string{"0s fin", "0s in force", "10ms close: shutdown complete", `10ms peer's reason "done"`}},
		{"receiver: a peer of the guide sends no FIN",
			[]string{"peer-shutdown", "wait 249ms", "phase?", "wait 1ms"},
			[]string{"0s fin", "249ms finished refusing=true", "250ms close: shutdown complete; the peer did not finish the control stream"}},
		{"receiver: work in flight finishes first",
			[]string{"request", "call", "peer-shutdown", "wait 100ms", "answer", "phase?", "wait 10ms", "answered", "wait 250ms"},
			[]string{"100ms draining refusing=true", "110ms fin", "360ms close: shutdown complete; the peer did not finish the control stream"}},
		{"receiver: the peer's FIN before ours",
			[]string{"request", "peer-shutdown", "wait 10ms", "peer-fin", "wait 10ms", "answer"},
			[]string{"20ms fin", "20ms close: shutdown complete"}},
		{"the peer's FIN without $/shutdown is one",
			[]string{"peer-fin", "phase?"},
			[]string{"0s fin", "0s close: shutdown complete", "0s finished refusing=true"}},
		{"the peer's $/shutdown while ours is held: ours is never sent",
			[]string{"call", "shutdown bye", "wait 10ms", "peer-shutdown why", "answered", "wait 250ms", "reason?"},
			[]string{"10ms fin", "260ms close: shutdown complete; the peer did not finish the control stream", `260ms peer's reason "why"`}},
		{"the two $/shutdowns crossed: no grace, the peer's FIN closes",
			[]string{"shutdown bye", "wait 10ms", "read", "peer-shutdown", "wait 10ms", "peer-fin"},
			[]string{"0s announce bye", "10ms fin", "20ms close: shutdown complete"}},
		{"our shutdown after the peer's is nothing new",
			[]string{"request", "peer-shutdown", "wait 10ms", "shutdown bye", "answer", "wait 10ms", "peer-fin"},
			[]string{"10ms fin", "20ms close: shutdown complete"}},
		{"the first reason the peer gave is kept",
			[]string{"request", "peer-shutdown", "peer-shutdown first", "peer-shutdown second", "reason?"},
			[]string{`0s peer's reason "first"`}},
		{"deadline before the work in flight ends",
			[]string{"request", "peer-shutdown", "wait 999ms", "wait 1ms", "answer", "wait 5s"},
			[]string{"1s cut off"}},
		{"deadline while our $/shutdown is held",
			[]string{"call", "shutdown bye", "wait 2s"},
			[]string{"1s cut off"}},
		{"deadline while the sender waits for the peer's close",
			[]string{"shutdown bye", "wait 2s"},
			[]string{"0s announce bye", "50ms fin", "1s cut off"}},
		{"deadline counts from the start, whoever started",
			[]string{"request", "peer-shutdown", "wait 500ms", "shutdown bye", "wait 600ms"},
			[]string{"1s cut off"}},
		{"the session closes during the drain",
			[]string{"request", "peer-shutdown", "wait 100ms", "end", "in-force?", "answer", "peer-fin", "wait 5s", "phase?"},
			[]string{"100ms in force", "5.1s draining refusing=true"}},
		{"the session closes before any shutdown",
			[]string{"end", "shutdown bye", "peer-shutdown", "wait 5s", "phase?", "in-force?"},
			[]string{"5s running refusing=false", "5s not in force"}},
		{"running: nothing is asked",
			[]string{"call", "request", "read", "answered", "answer", "wait 1h", "phase?", "in-force?"},
			[]string{"1h0m0s running refusing=false", "1h0m0s not in force"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newDrainRig()
			for _, step := range tc.script {
				r.run(t, step)
			}
			if !slices.Equal(r.log, tc.want) {
				t.Errorf("script %q\ngot  %q\nwant %q", tc.script, r.log, tc.want)
			}
			if r.d.ended && r.clk.live() > 0 {
				t.Errorf("the drain ended with %d timers set", r.clk.live())
			}
		})
	}
}
