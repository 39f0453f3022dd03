package flow

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/protocol"
)

// drain is a session's graceful shutdown, $/shutdown (spec §7.2). It is the
// one place that knows where a shutdown stands; the rest of the session asks
// it (refusing, finSent) and tells it what happened (readFIN, noteRead).
//
// Its phase only moves forward:
//
//	running   no shutdown: new work is taken.
//	draining  a shutdown is in force (Session.Draining is closed): a new
//	          request is refused with -32006 and Call fails with
//	          ErrShuttingDown (§7.2 rule 1), while what is in flight in both
//	          directions finishes (rule 2). When we started it, our
//	          $/shutdown waits in notice until our own calls and the
//	          execution streams of their results are done, and counts as in
//	          flight until it has been written (announcing).
//	finished  nothing is in flight and our FIN is sent on the control
//	          stream (rule 3): at once on the receiver, ShutdownGrace after
//	          the last frame read on the sender. Nothing more is written.
//	          Then the receiver closes the session with code 0 at the
//	          peer's FIN, or PeerFINWait after its own; the sender waits for
//	          that close, and closes itself PeerFINWait after the peer's FIN
//	          if it does not come (rule 4).
//
// Beside the phase it records who started (sent: our $/shutdown; got: the
// peer's, or its FIN when we had sent no $/shutdown) and whether the peer's
// FIN has been read (peerFIN). The deadline (Limits.DrainTimeout, rule 5)
// runs from the start of the drain, whoever started it.
//
// Every field is guarded by Session.mu, except lastRead (atomic). Only
// this file touches them.
type drain struct {
	phase      drainPhase
	sent       bool            // we sent (or hold) $/shutdown
	got        bool            // the peer sent $/shutdown, or finished the control stream first
	notice     *ShutdownParams // our $/shutdown, until our own calls are done
	announcing bool            // our $/shutdown is being written: no FIN before it
	peerFIN    bool            // the peer finished its direction of the control stream
	finTimer   *time.Timer     // ShutdownGrace before our FIN (sender)
	closeTimer *time.Timer     // PeerFINWait before our clean close
	lastRead   atomic.Int64    // unix nanos of the last control frame read, or of our $/shutdown
	// inForce is closed when the drain starts (Session.Draining); made
	// by the first Draining, not with the session (an idle session that
	// nobody asks holds no channel), closed at once if started is set.
	inForce chan struct{}
	started bool
}

func newDrain() drain { return drain{} }

// drainPhase is where a drain stands; see drain.
type drainPhase uint8

const (
	drainRunning drainPhase = iota
	drainDraining
	drainFinished
)

// refusing reports whether a shutdown is in force: no new work is taken.
// Session.mu must be held.
func (d *drain) refusing() bool { return d.phase >= drainDraining }

// pending counts what the drain itself waits for: our $/shutdown, held or
// being written. Session.mu must be held.
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

// readFIN records that the peer finished the control stream. Session.mu must
// be held.
func (d *drain) readFIN() { d.peerFIN = true }

// noteRead records that a control frame was read now: the sender's grace
// counts from it.
func (d *drain) noteRead() { d.lastRead.Store(time.Now().UnixNano()) }

// stopTimers stops the drain's timers; the session has ended. Session.mu
// must be held.
func (d *drain) stopTimers() {
	for _, t := range []*time.Timer{d.finTimer, d.closeTimer} {
		if t != nil {
			t.Stop()
		}
	}
}

// Draining is closed once a shutdown is in force (spec §7.2): $/shutdown
// was received (or the peer finished its control stream), or Shutdown was
// called, and in that case our $/shutdown has been sent already unless our
// own calls are still in flight. From then on Call refuses new requests.
// It is never closed on a session that ends without a shutdown.
func (s *Session) Draining() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dr.inForce == nil {
		s.dr.inForce = make(chan struct{})
		if s.dr.started {
			close(s.dr.inForce)
		}
	}
	return s.dr.inForce
}

// finSent reports whether our FIN has been sent on the control stream.
func (s *Session) finSent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dr.phase == drainFinished
}

// inflightLocked counts what a drain waits for. s.mu must be held.
func (s *Session) inflightLocked() int {
	return len(s.calls) + len(s.streamCalls) + len(s.handling) + s.openStreams + s.dr.pending()
}

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
// The drain deadline starts when Shutdown is called, and nothing it writes
// can hold it past that deadline or ctx: $/shutdown is written on a
// goroutine of its own (a peer that reads nothing holds the write until the
// close at the deadline ends it).
func (s *Session) Shutdown(ctx context.Context, reason string) error {
	t := time.NewTimer(s.lim.DrainTimeout)
	defer t.Stop()
	go s.startShutdown(true, reason)
	select {
	case <-s.done:
	case <-ctx.Done():
		s.closeWith(&SessionError{Code: CloseDrainTimeout, Reason: "shutdown cut short: " + s.drainLeft(), Err: ctx.Err()})
	case <-t.C:
		s.closeWith(&SessionError{Code: CloseDrainTimeout, Reason: s.drainLeft()})
	}
	var se *SessionError
	if err := s.Err(); errors.As(err, &se) && (se.clean() || se.Code == CloseRefused) {
		// A session whose initialize was refused had nothing to drain: its
		// ending, however it came, is not a failed shutdown.
		return nil
	}
	return s.Err()
}

// startShutdown puts the session in DRAINING. send tells the peer with
// $/shutdown (we start the shutdown); without it the peer started it.
func (s *Session) startShutdown(send bool, reason string) { s.drainOn(send, false, reason) }

// drainOn is startShutdown; fin says that the peer started it by finishing
// the control stream rather than with $/shutdown.
func (s *Session) drainOn(send, fin bool, reason string) {
	s.mu.Lock()
	d := &s.dr
	already := d.refusing()
	if !already {
		d.phase = drainDraining
	}
	if !send && (!fin || !d.sent) {
		// A FIN is a $/shutdown from the peer only when we did not send one.
		d.got = true
	}
	send = send && !already
	if send {
		d.sent = true
		d.notice = &ShutdownParams{Reason: reason}
	}
	s.mu.Unlock()
	if already {
		s.maybeFinish()
		return
	}
	if s.State() == StateReady {
		s.setState(StateDraining)
	}
	if s.server && s.State() < StateControlOpened {
		// The client has not opened its control stream: nothing has been
		// accepted, so nothing is drained (a shutdown racing a CONNECT).
		s.closeWith(&SessionError{Code: CloseOK, Reason: reasonShutBeforeControl, Err: ErrClosed})
	}
	// The drain has a deadline whoever started it.
	go func() {
		t := time.NewTimer(s.lim.DrainTimeout)
		defer t.Stop()
		select {
		case <-s.done:
		case <-t.C:
			s.closeWith(&SessionError{Code: CloseDrainTimeout, Reason: s.drainLeft()})
		}
	}()
	s.maybeFinish()
	s.mu.Lock()
	d.started = true
	if d.inForce != nil {
		close(d.inForce)
	}
	s.mu.Unlock()
}

// announce sends our $/shutdown once our own calls, and the execution
// streams of their results, are done (spec §7.2): the peer that receives it
// closes the session soon after its own work ends, so it must not come
// while we still read from the peer. Until then new requests are refused
// all the same.
func (s *Session) announce() {
	s.mu.Lock()
	d := &s.dr
	if d.notice == nil || len(s.calls)+len(s.streamCalls) > 0 {
		s.mu.Unlock()
		return
	}
	p := d.notice
	d.notice = nil
	if d.got {
		// The peer started a shutdown too: it needs no word from us.
		s.mu.Unlock()
		return
	}
	d.announcing = true
	d.noteRead() // the grace counts from our $/shutdown too
	s.mu.Unlock()
	var params any
	if p.Reason != "" {
		params = p
	}
	err := s.Notify(protocol.MethodShutdown, params)
	s.mu.Lock()
	d.announcing = false
	if errors.Is(err, errNoControl) {
		// Announced again once the control stream is open (serve).
		d.notice = p
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Debug("$/shutdown not sent", "err", err)
	}
}

// maybeFinish advances a drain (spec §7.2). Once $/shutdown is in force and
// nothing is in flight, it finishes (FIN) our direction of the control
// stream: at once on the side that received $/shutdown; ShutdownGrace after
// the last frame read on the side that sent it, so that a request that
// crossed its $/shutdown is still answered (-32006) before the FIN. After
// the FIN, the side that received $/shutdown closes the session (CloseOK)
// when the peer's FIN has come, or PeerFINWait after its own FIN if it does
// not come (a peer that follows only the guide never sends it). The side
// that sent $/shutdown waits for that close, and closes itself PeerFINWait
// after it has read the peer's FIN if the close does not come.
func (s *Session) maybeFinish() {
	s.announce()
	s.mu.Lock()
	d := &s.dr
	if !d.refusing() || s.inflightLocked() > 0 {
		s.mu.Unlock()
		return
	}
	if d.phase != drainFinished && !d.got {
		if wait := ShutdownGrace - time.Since(time.Unix(0, d.lastRead.Load())); wait > 0 {
			if d.finTimer == nil {
				d.finTimer = time.AfterFunc(wait, func() {
					s.mu.Lock()
					d.finTimer = nil
					s.mu.Unlock()
					s.maybeFinish()
				})
			}
			s.mu.Unlock()
			return
		}
	}
	s.mu.Unlock()
	if !s.finish() {
		return
	}
	s.mu.Lock()
	if d.got && d.peerFIN {
		s.mu.Unlock()
		s.closeWith(&SessionError{Code: CloseOK, Reason: "shutdown complete", Err: ErrClosed})
		return
	}
	defer s.mu.Unlock()
	if d.closeTimer == nil && (d.got || d.peerFIN) {
		reason := "shutdown complete; the peer did not finish the control stream"
		if !d.got {
			reason = "shutdown complete; the peer did not close the session"
		}
		d.closeTimer = time.AfterFunc(PeerFINWait, func() {
			s.closeWith(&SessionError{Code: CloseOK, Reason: reason, Err: ErrClosed})
		})
	}
}

// finish sends our FIN on the control stream if the drain allows it, and
// reports whether it has been sent. Holding wmu orders it after every frame
// already written: a reply is either written before the FIN or not at all.
func (s *Session) finish() bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	d := &s.dr
	fin := d.phase == drainDraining && s.inflightLocked() == 0 && s.ctrl != nil
	if fin {
		d.phase = drainFinished
	}
	sent := d.phase == drainFinished
	s.mu.Unlock()
	if fin {
		_ = s.ctrl.Close()
	}
	return sent
}
