package flow

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/protocol"
)

// This file is long because the drain is one state machine whose phases,
// events and timer are meant to be read in one place (spec §7.2's five
// rules); more than half of it is the doc of each event.

// drain is a session's graceful shutdown, $/shutdown (spec §7.2), as one
// state machine. It is the one place that knows where a shutdown stands and
// when it must move on; the session tells it what happened (the events
// below, each a method) and does what it answers (a drainStep: write our
// $/shutdown, finish the control stream, close the session). It writes
// nothing itself, and reads the time and sets its one timer through an
// injected clock, so that its tests run on fake time (drain_test.go).
//
// Its phase only moves forward:
//
//	running   no shutdown: new work is taken.
//	draining  a shutdown is in force: a new request is refused with -32006
//	          and Call fails with ErrShuttingDown (rule 1), while what is in
//	          flight in both directions finishes (rule 2). When we started
//	          it, our $/shutdown waits in notice until our own calls and the
//	          execution streams of their results are done, and counts as in
//	          flight until it has been written (announcing).
//	grace     nothing is in flight on the side that sent $/shutdown: it
//	          keeps reading for Limits.ShutdownGrace after the last frame
//	          read (or its $/shutdown), answering -32006 (rule 3). New work
//	          (a ping of ours) sends it back to draining.
//	finished  our FIN is sent on the control stream (rule 3): at once on
//	          the receiver, after the grace on the sender. Nothing more is
//	          written. The receiver closes the session with code 0 at the
//	          peer's FIN, or Limits.PeerFINWait after its own; the sender
//	          waits for that close, and closes itself PeerFINWait after the
//	          peer's FIN if it does not come (rule 4).
//
// The events: shutdown (Shutdown, or the idle or token timeout, called
// here), peerShutdown (the peer's $/shutdown read), readFIN (the peer
// finished the control stream; a shutdown when we sent no $/shutdown),
// noteRead (a control frame read: the grace counts from it), next (work in
// flight may have ended: the session asks what to do now), announced (our
// $/shutdown written, or held for want of a control stream), fin (our FIN
// is about to be written), fired (the timer ran out), and end (the session
// ended, whoever ended it: the drain stops). The deadline
// (Limits.DrainTimeout, rule 5) runs from the start of the drain, whoever
// started it, and cuts off what is left (code 3).
//
// Beside the phase it records who started (sent: our $/shutdown; got: the
// peer's, or its FIN when we had sent no $/shutdown) and whether the peer's
// FIN has been read (peerFIN). A side that both sent and got $/shutdown
// (the two crossed) drains as a receiver: it needs no grace, and the peer
// needs no word from it.
//
// Every field is guarded by Session.mu, except lastRead (atomic: written
// for every frame read during the drain). Only this file touches them; the
// session holds its drain in a drainRef.
type drain struct {
	clk  clock
	wake func() // the timer's callback (Session.drainFired); runs on the clock's goroutine
	lim  drainLimits

	phase drainPhase
	// ended is set once the session ended or the drain decided its close:
	// from then on the drain asks for nothing, and its timer is stopped.
	ended      bool
	sent       bool            // we sent (or hold) $/shutdown
	got        bool            // the peer sent $/shutdown, or finished the control stream first
	peerFIN    bool            // the peer finished its direction of the control stream
	notice     *ShutdownParams // our $/shutdown, until our own calls are done
	announcing bool            // our $/shutdown is being written: no FIN before it
	peerReason string          // the first reason the peer's $/shutdown gave
	lastRead   atomic.Int64    // the clock's unix nanos of the last control frame read, or of our $/shutdown

	// The times the drain waits for, zero when it does not; its one
	// timer is set for the earliest (arm).
	deadlineAt time.Time // the drain deadline: cut off what is left
	graceAt    time.Time // the sender's grace ends: FIN
	closeAt    time.Time // PeerFINWait after our FIN or the peer's: close with code 0
	closeWhy   string    // the reason of that close
	timer      clockTimer

	// inForce is closed once the drain is in force and our $/shutdown,
	// unless held, has been written (Session.Draining). It is made by the
	// first Draining or at the start of the drain, not with the session:
	// an idle session that nobody asks holds no channel.
	inForce chan struct{}
}

// drainRef is a session's one field for its drain: nil until a shutdown of
// either side starts it or Draining is asked, so that an idle session holds
// a pointer and no drain. The pointer is atomic so that the reading
// goroutine notes frames without Session.mu; Session.mu guards the rest.
// A nil drain is running.
type drainRef struct{ p atomic.Pointer[drain] }

// refusing reports whether a shutdown is in force. Session.mu must be held.
func (r *drainRef) refusing() bool { d := r.p.Load(); return d != nil && d.refusing() }

// pending counts what the drain itself waits for (drain.pending).
// Session.mu must be held.
func (r *drainRef) pending() int {
	if d := r.p.Load(); d != nil {
		return d.pending()
	}
	return 0
}

// noteRead is the event "a control frame was read now"; nothing happens
// outside a drain, which counts its grace from its own $/shutdown at the
// earliest.
func (r *drainRef) noteRead() {
	if d := r.p.Load(); d != nil {
		d.noteRead()
	}
}

// drainLimits are the drain's timings (Limits, after withDefaults).
type drainLimits struct {
	grace    time.Duration // Limits.ShutdownGrace
	finWait  time.Duration // Limits.PeerFINWait
	deadline time.Duration // Limits.DrainTimeout
}

// drainPhase is where a drain stands; see drain.
type drainPhase uint8

const (
	drainRunning drainPhase = iota
	drainDraining
	drainGrace
	drainFinished
)

func (p drainPhase) String() string {
	return [...]string{"running", "draining", "grace", "finished"}[p]
}

// drainAct is what a drainStep asks of the session.
type drainAct uint8

const (
	drainNone     drainAct = iota
	drainAnnounce          // write notice, our $/shutdown; then announced
	drainFIN               // finish our direction of the control stream (fin decides, under the write lock)
	drainClose             // close the session with code 0 and why
	drainCutOff            // the deadline passed: close with code 3
	drainAdvance           // the grace ran out: ask next
)

// drainStep is the drain's answer to an event.
type drainStep struct {
	act    drainAct
	notice *ShutdownParams // drainAnnounce
	why    string          // drainClose
}

// clock is where the drain reads the time and sets its timer: the real
// time in a session (realClock), fake time in its tests.
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) clockTimer
}

// clockTimer is the timer a clock sets (a *time.Timer for realClock).
type clockTimer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// realClock is the time package's clock.
type realClock struct{}

func (realClock) Now() time.Time                                 { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) clockTimer { return time.AfterFunc(d, f) }

// init readies d for a session with limits lim (after withDefaults); wake
// is called when its timer fires.
func (d *drain) init(clk clock, lim Limits, wake func()) {
	d.clk, d.wake = clk, wake
	d.lim = drainLimits{grace: lim.ShutdownGrace, finWait: lim.PeerFINWait, deadline: lim.DrainTimeout}
}

// refusing reports whether a shutdown is in force: no new work is taken.
func (d *drain) refusing() bool { return d.phase != drainRunning }

// pending counts what the drain itself waits for: our $/shutdown, held or
// being written.
func (d *drain) pending() int {
	n := 0
	if d.notice != nil {
		n++
	}
	if d.announcing {
		n++
	}
	return n
}

// begin moves a running drain to draining and starts its deadline; it
// reports whether it did (the drain started now).
func (d *drain) begin() bool {
	if d.phase != drainRunning || d.ended {
		return false
	}
	d.phase = drainDraining
	d.deadlineAt = d.clk.Now().Add(d.lim.deadline)
	d.arm()
	if d.inForce == nil {
		d.inForce = make(chan struct{})
	}
	return true
}

// shutdown is the event "we shut down": it starts the drain, and our
// $/shutdown with reason waits in notice for our own calls (rule 1). A
// shutdown after one of either side's is nothing new. It reports whether
// the drain started now.
func (d *drain) shutdown(reason string) bool {
	if !d.begin() {
		return false
	}
	d.sent = true
	d.notice = &ShutdownParams{Reason: reason}
	return true
}

// peerShutdown is the event "the peer's $/shutdown was read", with its
// reason ("" when it gave none). It reports whether the drain started now.
func (d *drain) peerShutdown(reason string) bool {
	if d.peerReason == "" {
		d.peerReason = reason
	}
	d.got = true
	return d.begin()
}

// readFIN is the event "the peer finished the control stream": a shutdown
// from the peer unless we had sent $/shutdown. It reports whether the drain
// started now.
func (d *drain) readFIN() bool {
	d.peerFIN = true
	if !d.sent {
		d.got = true
	}
	return d.begin()
}

// noteRead is the event "a control frame was read now": the sender's grace
// counts from it.
func (d *drain) noteRead() { d.lastRead.Store(d.clk.Now().UnixNano()) }

// next is the event "what was in flight may have changed": own counts our
// calls and the execution streams of their results still unsettled, work
// all that is in flight (ours, the peer's requests and the execution
// streams both ways; own included). It answers what the session must do
// now, and is asked again after each announce and FIN.
func (d *drain) next(own, work int) drainStep {
	if d.phase == drainRunning {
		return drainStep{}
	}
	if !d.announcing {
		closeOnce(d.inForce)
	}
	if d.ended {
		return drainStep{}
	}
	if d.notice != nil && own == 0 {
		p := d.notice
		d.notice = nil
		if !d.got {
			// (The peer started a shutdown too: it needs no word from us.)
			d.announcing = true
			d.noteRead() // the grace counts from our $/shutdown too
			return drainStep{act: drainAnnounce, notice: p}
		}
	}
	now := d.clk.Now()
	switch d.phase {
	case drainDraining, drainGrace:
		if work+d.pending() > 0 {
			d.phase, d.graceAt = drainDraining, time.Time{}
			d.arm()
			return drainStep{}
		}
		if !d.got {
			if at := time.Unix(0, d.lastRead.Load()).Add(d.lim.grace); now.Before(at) {
				d.phase, d.graceAt = drainGrace, at
				d.arm()
				return drainStep{}
			}
		}
		return drainStep{act: drainFIN}
	case drainFinished:
		if d.got && d.peerFIN {
			return d.close("shutdown complete")
		}
		if d.closeAt.IsZero() && (d.got || d.peerFIN) {
			d.closeWhy = "shutdown complete; the peer did not finish the control stream"
			if !d.got {
				d.closeWhy = "shutdown complete; the peer did not close the session"
			}
			d.closeAt = now.Add(d.lim.finWait)
			d.arm()
		}
	}
	return drainStep{}
}

// announced is the event "our $/shutdown p was written, or not": held says
// that there was no control stream yet (errNoControl), and p waits for it
// (the server announces once the client opens it).
func (d *drain) announced(p *ShutdownParams, held bool) {
	d.announcing = false
	if held {
		d.notice = p
	}
	closeOnce(d.inForce)
}

// fin is the event "our FIN is about to be written", asked under the write
// lock with work as for next: it reports whether the FIN may go, and if so
// the drain is finished.
func (d *drain) fin(work int) bool {
	if d.ended || (d.phase != drainDraining && d.phase != drainGrace) || work+d.pending() > 0 {
		return false
	}
	d.phase, d.graceAt = drainFinished, time.Time{}
	d.arm()
	return true
}

// fired is the event "the timer ran out" (it may be stale: what it was set
// for is checked against the time).
func (d *drain) fired() drainStep {
	if d.ended || d.phase == drainRunning {
		return drainStep{}
	}
	now := d.clk.Now()
	switch {
	case !now.Before(d.deadlineAt):
		d.stop()
		return drainStep{act: drainCutOff}
	case !d.closeAt.IsZero() && !now.Before(d.closeAt):
		return d.close(d.closeWhy)
	case !d.graceAt.IsZero() && !now.Before(d.graceAt):
		d.graceAt = time.Time{}
		d.arm()
		return drainStep{act: drainAdvance}
	}
	d.arm()
	return drainStep{}
}

// end is the event "the session ended" for the drain, if there is one
// (Session.mu held).
func (r *drainRef) end() {
	if d := r.p.Load(); d != nil {
		d.end()
	}
}

// end is the event "the session ended", however it ended: the drain asks
// for nothing more.
func (d *drain) end() {
	d.stop()
	if d.phase != drainRunning {
		closeOnce(d.inForce)
	}
}

// close is the drain's last step: the session closes with code 0 and why.
func (d *drain) close(why string) drainStep {
	d.stop()
	return drainStep{act: drainClose, why: why}
}

// stop ends the drain's part: no more steps, no timer.
func (d *drain) stop() {
	d.ended = true
	if d.timer != nil {
		d.timer.Stop()
	}
}

// arm sets the timer for the earliest time the drain waits for.
func (d *drain) arm() {
	var at time.Time
	for _, t := range [...]time.Time{d.deadlineAt, d.graceAt, d.closeAt} {
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	if d.ended || at.IsZero() {
		if d.timer != nil {
			d.timer.Stop()
		}
		return
	}
	wait := at.Sub(d.clk.Now())
	if d.timer == nil {
		d.timer = d.clk.AfterFunc(wait, d.wake)
		return
	}
	d.timer.Reset(wait)
}

// draining returns inForce, made if need be.
func (d *drain) draining() <-chan struct{} {
	if d.inForce == nil {
		d.inForce = make(chan struct{})
	}
	return d.inForce
}

// closeOnce closes c unless it is nil or closed.
func closeOnce(c chan struct{}) {
	if c == nil {
		return
	}
	select {
	case <-c:
	default:
		close(c)
	}
}

// ---- the session's side: events in, steps done ----

// drainLocked returns the session's drain, made if need be: ended if the
// session has (closeWith cancels s.ctx before it ends the drain), so that
// a Shutdown after the end starts nothing. s.mu must be held.
func (s *Session) drainLocked() *drain {
	d := s.dr.p.Load()
	if d == nil {
		d = &drain{ended: s.ctx.Err() != nil}
		d.init(realClock{}, s.lim, s.drainFired)
		s.dr.p.Store(d)
	}
	return d
}

// Draining is closed once a shutdown is in force (spec §7.2): $/shutdown
// was received (or the peer finished its control stream), or Shutdown was
// called, and in that case our $/shutdown has been sent already unless our
// own calls are still in flight. From then on Call refuses new requests.
// It is never closed on a session that ends without a shutdown.
func (s *Session) Draining() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.drainLocked().draining()
}

// PeerShutdownReason is the reason the peer's $/shutdown gave (spec §7.2),
// or "" when none came or it gave none. A client whose server shut the
// session down with ReasonTokenExpired reconnects with a fresh token
// (spec §9.1).
func (s *Session) PeerShutdownReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.dr.p.Load(); d != nil {
		return d.peerReason
	}
	return ""
}

// finSent reports whether our FIN has been sent on the control stream.
func (s *Session) finSent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dr.p.Load()
	return d != nil && d.phase == drainFinished
}

// workLocked counts what is in flight but the drain's own $/shutdown: our
// calls, the execution streams of their results, the peer's requests and
// the execution streams we write. s.mu must be held.
func (s *Session) workLocked() int {
	return len(s.calls) + len(s.streamCalls) + len(s.handling) + s.openStreams
}

// inflightLocked counts what a drain waits for. s.mu must be held.
func (s *Session) inflightLocked() int { return s.workLocked() + s.dr.pending() }

// idleInDrain reports whether a $/shutdown is in force and nothing is in
// flight: a peer's close now loses nothing (spec §7.2).
func (s *Session) idleInDrain() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dr.refusing() && s.inflightLocked() == 0
}

// drainLeft describes what a drain deadline cut off.
func (s *Session) drainLeft() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d requests of ours, %d of the peer's and %d execution streams still in flight",
		len(s.calls), len(s.handling), len(s.streamCalls)+s.openStreams)
}

// Shutdown ends the session gracefully (spec §7.2): it sends $/shutdown,
// stops accepting new work, lets every request and execution stream in
// flight in both directions finish, then closes. It returns when the session
// has closed, or when ctx or the drain deadline ends first, in which case
// what is left is cut off and the error says so.
//
// The drain, and its deadline, start when Shutdown is called (unless a
// shutdown of either side started them before), and nothing it writes can
// hold it past that deadline or ctx: $/shutdown is written on a goroutine
// of its own (a peer that reads nothing holds the write until the close at
// the deadline ends it).
func (s *Session) Shutdown(ctx context.Context, reason string) error {
	first := s.drainEvent(func(d *drain) bool { return d.shutdown(reason) })
	go s.drainBegun(first)
	select {
	case <-s.done:
	case <-ctx.Done():
		s.closeWith(&SessionError{Code: CloseDrainTimeout, Reason: "shutdown cut short: " + s.drainLeft(), Err: ctx.Err()})
	}
	var se *SessionError
	if err := s.Err(); errors.As(err, &se) && (se.clean() || se.Code == CloseRefused) {
		// A session whose initialize was refused had nothing to drain: its
		// ending, however it came, is not a failed shutdown.
		return nil
	}
	return s.Err()
}

// startShutdown shuts the session down as Shutdown does, without waiting:
// the idle and token timeouts, and a server that shuts down.
func (s *Session) startShutdown(reason string) {
	s.drainBegun(s.drainEvent(func(d *drain) bool { return d.shutdown(reason) }))
}

// peerShutdown handles the peer's $/shutdown, with its reason.
func (s *Session) peerShutdown(reason string) {
	s.drainBegun(s.drainEvent(func(d *drain) bool { return d.peerShutdown(reason) }))
}

// drainEvent applies a starting event to the drain under s.mu and reports
// whether the drain started; a READY session is then DRAINING.
func (s *Session) drainEvent(ev func(*drain) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.drainStartedLocked(ev(s.drainLocked()))
}

// drainStartedLocked moves a READY session to DRAINING if first says that
// the drain started now, and returns first. s.mu must be held.
func (s *Session) drainStartedLocked(first bool) bool {
	if first {
		s.state.CompareAndSwap(int32(StateReady), int32(StateDraining))
	}
	return first
}

// drainBegun follows a starting event, outside s.mu: a server session
// whose client has not opened its control stream has accepted nothing, so
// nothing is drained (a shutdown racing a CONNECT) and it closes; any
// other advances.
func (s *Session) drainBegun(first bool) {
	if first && s.server && s.State() < StateControlOpened {
		s.closeWith(&SessionError{Code: CloseOK, Reason: reasonShutBeforeControl, Err: ErrClosed})
	}
	s.maybeFinish()
}

// maybeFinish is the event "what was in flight may have changed": it does
// what the drain asks until it asks for nothing (spec §7.2).
func (s *Session) maybeFinish() {
	for {
		s.mu.Lock()
		var st drainStep
		if d := s.dr.p.Load(); d != nil {
			st = d.next(len(s.calls)+len(s.streamCalls), s.workLocked())
		}
		s.mu.Unlock()
		switch st.act {
		case drainNone:
			return
		case drainAnnounce:
			if !s.announce(st.notice) {
				return
			}
		case drainFIN:
			if !s.finish() {
				return
			}
		default:
			s.drainDo(st)
			return
		}
	}
}

// drainFired is the drain timer's callback.
func (s *Session) drainFired() {
	s.mu.Lock()
	st := s.dr.p.Load().fired() // the timer is the drain's: it exists
	s.mu.Unlock()
	s.drainDo(st)
}

// drainDo does a step of the drain's timer, or its close.
func (s *Session) drainDo(st drainStep) {
	switch st.act {
	case drainClose:
		s.closeWith(&SessionError{Code: CloseOK, Reason: st.why, Err: ErrClosed})
	case drainCutOff:
		s.closeWith(&SessionError{Code: CloseDrainTimeout, Reason: s.drainLeft()})
	case drainAdvance:
		s.maybeFinish()
	}
}

// announce writes our $/shutdown p, once our own calls, and the execution
// streams of their results, are done (spec §7.2): the peer that receives it
// closes the session soon after its own work ends, so it must not come
// while we still read from the peer. It reports false when there was no
// control stream to write it on: the server announces it once the client
// opens one (serve).
func (s *Session) announce(p *ShutdownParams) bool {
	var params any
	if p.Reason != "" {
		params = p
	}
	err := s.Notify(protocol.MethodShutdown, params)
	held := errors.Is(err, errNoControl)
	s.mu.Lock()
	s.dr.p.Load().announced(p, held) // it asked for the announce: it exists
	s.mu.Unlock()
	if err != nil {
		s.log.Debug("$/shutdown not sent", "err", err)
	}
	return !held
}

// finish sends our FIN on the control stream if the drain allows it, and
// reports whether it did. Holding wmu orders it after every frame already
// written: a reply is either written before the FIN or not at all.
func (s *Session) finish() bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	d := s.dr.p.Load()
	fin := s.ctrl != nil && d != nil && d.fin(s.workLocked())
	s.mu.Unlock()
	if fin {
		_ = s.flushLocked() // the frames accepted before it (sendWith)
		_ = s.ctrl.Close()
	}
	return fin
}
