package flow

import (
	"net"
	"testing"
	"time"
)

// RefuseConnections makes srv's QUIC stack refuse a new connection with
// CONNECTION_REFUSED whenever refuse returns true for its address (asked
// once per Initial packet). Call it before Serve.
func RefuseConnections(srv *Server, refuse func(net.Addr) bool) { srv.refuse = refuse }

// WarnSmallBuffers logs, as Serve does, if pc's buffers are small.
func WarnSmallBuffers(srv *Server, pc net.PacketConn) { srv.warnSmallBuffers(pc) }

// ProgressSenderEnded returns a channel closed once the session's progress
// sender has returned (closed at once if it never started), so that tests
// can show it ends with its session.
func ProgressSenderEnded(s *Session) <-chan struct{} {
	var ended <-chan struct{}
	s.pg.start.Do(func() {
		c := make(chan struct{})
		close(c)
		ended = c
	})
	if ended != nil {
		return ended
	}
	return s.pg.ended
}

// OpenStreams returns how many execution streams s is writing.
func OpenStreams(s *Session) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.openStreams
}

// DatagramsOn reports whether s's negotiation turned datagrams on (progress
// then travels as datagrams, spec §6).
func DatagramsOn(s *Session) bool { return s.handshake().datagrams }

// HelloUsed reports whether $/hello settled s's transport (spec §11.3).
func HelloUsed(s *Session) bool { return s.hello.Load() }

// PaceStreamWith makes w pace itself as on a path whose RTT samples are
// always minRTT and latest (pace.go), whatever its connection measures.
func PaceStreamWith(w *StreamWriter, minRTT, latest time.Duration) {
	w.pace = newPacer(0, func() rttSample { return rttSample{min: minRTT, latest: latest} }, nil)
}

// Paced reports whether w paces itself: its connection's minimum RTT is
// paceMinRTT or more (pace.go).
func Paced(w *StreamWriter) bool { return w.pace != nil && w.pace.law.active(w.pace.stats()) }

// Refusing reports whether a shutdown of either side is in force on s: its
// drain has started (drain.go).
func Refusing(s *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dr.refusing()
}

// AwaitFreshHook makes srv's Shutdown call hook when it begins waiting for
// the first request of n fresh connections, and wait up to wait (0:
// FreshWait). Call it before Shutdown.
func AwaitFreshHook(srv *Server, wait time.Duration, hook func(n int)) {
	srv.freshWait, srv.onAwaitFresh = wait, hook
}

// FreshConns returns how many of srv's connections have made no request.
func FreshConns(srv *Server) int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return len(srv.fresh)
}

// SetClosingHook makes every session of this process that ends run f
// after its context is cancelled (its handlers see their ends) and before
// it closes, until t ends. Tests that use it must not run in parallel with
// others.
func SetClosingHook(t testing.TB, f func()) {
	closingHook.Store(&f)
	t.Cleanup(func() { closingHook.Store(nil) })
}

// SetStreamEndingHook makes every execution stream of this process run f
// between its FIN or reset and its release, until t ends. Tests that use it
// must not run in parallel with others.
func SetStreamEndingHook(t testing.TB, f func()) {
	streamEndingHook.Store(&f)
	t.Cleanup(func() { streamEndingHook.Store(nil) })
}

// SetYieldHook makes every session of this process run f where a sender
// that is to write the pending control frames yields (sendWith), until t
// ends. Tests that use it must not run in parallel with others.
func SetYieldHook(t testing.TB, f func()) {
	yieldHook.Store(&f)
	t.Cleanup(func() { yieldHook.Store(nil) })
}

// SetAccepting makes srv accept with the given number of acceptors (1 at
// least), at most maxSpares spares that wait idle each, and, if hold is
// not nil, acceptors that wait for it to close before they begin (so that
// the spares alone accept). Call it before Serve.
func SetAccepting(srv *Server, acceptors, maxSpares int, idle time.Duration, hold <-chan struct{}) {
	srv.acceptPlan = acceptPlan{acceptors: acceptors, maxSpares: maxSpares, spareIdle: idle, hold: hold}
}

// Spares returns how many spares of srv's accepting wait in its
// listener's Accept.
func Spares(srv *Server) int {
	srv.mu.Lock()
	acc := srv.acc
	srv.mu.Unlock()
	if acc == nil {
		return 0
	}
	return acc.waitingSpares()
}
