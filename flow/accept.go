package flow

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// Accepting QUIC connections (docs/design.md, "Accepting").
//
// quic-go hands a connection whose handshake has begun to a goroutine
// waiting in the listener's Accept, or else queues it (32 at most) and
// refuses the next one with CONNECTION_REFUSED. So a burst of handshakes
// needs about as many goroutines waiting in Accept, or about to, as it has
// handshakes beyond 32, however late the scheduler runs them.
// webtransport.Server.Serve's one accepting goroutine fell behind such
// bursts. Goroutines that wait all the time have a cost: their stacks
// (about 4 KiB each) and every collection's scan of them. A server that
// kept 256 waiting held 1 MiB of stacks more than one with 8, and a go-sdk
// echo call over it spent 44-46 µs of CPU scanning stacks instead of 27-29
// (docs/BENCHMARKS.md).
//
// So a few acceptors wait all the time, and each new connection starts a
// spare as quic-go first hears of it: GetConfigForClient runs on the
// connection's first Initial, before quic-go starts the handshake's own
// goroutines. A spare takes one connection and ends; when an acceptor
// takes a connection instead, it ends a waiting spare (retire); a spare
// that neither happens to ends after spareIdle (its handshake failed). At
// most maxSpares wait at once, so Initials that never finish a handshake
// cannot make more.

// acceptPlan is how many goroutines accept, and for how long a spare waits.
type acceptPlan struct {
	acceptors int           // wait in Accept all the time; 1 at least
	maxSpares int           // spares waiting at once, at most
	spareIdle time.Duration // a spare with no connection ends after this
	// hold, if not nil (tests only, export_test.go), is closed when the
	// acceptors may begin: until then the spares alone accept.
	hold <-chan struct{}
}

// defaultAcceptPlan is every Server's but the tests'.
var defaultAcceptPlan = acceptPlan{acceptors: 8, maxSpares: 256, spareIdle: 10 * time.Second}

// accepting is one Serve's accepting goroutines.
type accepting struct {
	s    *Server
	plan acceptPlan
	wg   sync.WaitGroup                     // the spares
	ln   atomic.Pointer[quic.EarlyListener] // set once the acceptors run

	mu      sync.Mutex
	waiting map[*spare]struct{} // the spares in Accept, to retire
	closed  bool                // the acceptors have returned: no more spares
}

// spare is one spare's way out of Accept.
type spare struct{ cancel context.CancelFunc }

// initial starts a spare for a connection quic-go has just heard of (from
// GetConfigForClient, on quic-go's goroutine: it must not block), unless
// maxSpares are waiting already.
func (a *accepting) initial() {
	ln := a.ln.Load()
	if ln == nil {
		return // before run: the acceptors and quic-go's queue take it
	}
	a.mu.Lock()
	if a.closed || len(a.waiting) >= a.plan.maxSpares {
		a.mu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.plan.spareIdle)
	sp := &spare{cancel}
	if a.waiting == nil {
		a.waiting = map[*spare]struct{}{}
	}
	a.waiting[sp] = struct{}{}
	a.wg.Add(1) // under mu: never after run's a.wg.Wait may have returned
	a.mu.Unlock()
	go func() {
		defer a.wg.Done()
		conn, err := ln.Accept(ctx)
		a.mu.Lock()
		delete(a.waiting, sp)
		a.mu.Unlock()
		cancel()
		if err == nil {
			a.s.serveConn(conn)
		}
	}()
}

// retire ends one waiting spare, if any: an acceptor took the connection
// it was started for (the one waiting longest in Accept gets the next
// connection: quic-go's queue is a channel), and one goroutine waits in
// Accept for each handshake under way, as before it.
func (a *accepting) retire() {
	a.mu.Lock()
	var sp *spare
	for sp = range a.waiting {
		delete(a.waiting, sp)
		break
	}
	a.mu.Unlock()
	if sp != nil {
		sp.cancel() // its Accept returns, or has returned a connection it serves
	}
}

// waitingSpares is how many spares wait in Accept (Spares, in tests).
func (a *accepting) waitingSpares() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.waiting)
}

// run starts the acceptors on ln and returns, with the first acceptor's
// error, once ln is closed and every acceptor and spare has returned (a
// spare waiting in Accept returns when ln closes).
func (a *accepting) run(ln *quic.EarlyListener) error {
	errs := make(chan error, a.plan.acceptors)
	var acceptors sync.WaitGroup
	for range a.plan.acceptors {
		acceptors.Go(func() {
			if a.plan.hold != nil {
				<-a.plan.hold
			}
			for {
				conn, err := ln.Accept(context.Background())
				if err != nil {
					errs <- err
					return
				}
				a.retire()
				a.s.serveConn(conn)
			}
		})
	}
	a.ln.Store(ln)
	acceptors.Wait() // ln is closed
	// quic-go may still be in GetConfigForClient for an Initial it read
	// before: initial starts no spare from now on.
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.wg.Wait()
	return <-errs
}

// serveConn hands conn to the WebTransport server on a goroutine of its
// own, one of s.conns.
func (s *Server) serveConn(conn *quic.Conn) {
	s.addFresh(conn)
	s.conns.Go(func() {
		defer s.dropFresh(conn)
		if err := s.wt.ServeQUICConn(conn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Debug("QUIC connection ended", "remote", conn.RemoteAddr(), "err", err)
		}
	})
}
