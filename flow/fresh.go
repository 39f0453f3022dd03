package flow

import (
	"context"
	"net/http"
	"time"

	"github.com/quic-go/quic-go"
)

// Fresh connections: a QUIC connection the server accepted on which no
// request has come yet (spec §7.2, the server's end of a drain). Chromium's
// network service crashes, taking every connection of the browser with it,
// when a connection is closed after its handshake and before the
// WebTransport CONNECT it is about to send has been answered (three
// minidumps, and a server closing each connection 1 ms after its
// handshake crashed it 3 times in 9; closing one from the CONNECT's
// handler, 503 or not, 0 of 22: docs/deploy.md, "Fleet"). A server whose
// drain ends would close such a connection, one that reached it in the
// drain's last moment, with the rest; so Shutdown first waits, up to
// FreshWait, for each fresh connection's first request (a CONNECT, which
// gets 503 while the server shuts down) or its end.

// FreshWait bounds how long Shutdown waits for the first request of the
// connections that have made none yet before it closes them: a browser
// sends its CONNECT one round trip after the handshake.
const FreshWait = time.Second

// addFresh notes an accepted connection that has made no request yet.
func (s *Server) addFresh(c *quic.Conn) {
	s.mu.Lock()
	if s.fresh == nil {
		s.fresh = map[*quic.Conn]struct{}{}
	}
	s.fresh[c] = struct{}{}
	s.mu.Unlock()
}

// dropFresh notes that c has made a request, or has ended.
func (s *Server) dropFresh(c *quic.Conn) {
	s.mu.Lock()
	if _, ok := s.fresh[c]; ok {
		delete(s.fresh, c)
		if s.freshGone != nil {
			close(s.freshGone)
			s.freshGone = nil
		}
	}
	s.mu.Unlock()
}

// requestSeen wraps the server's handler: a request marks its connection
// as no longer fresh once it has been handled (a CONNECT refused with 503
// has had its answer written).
func (s *Server) requestSeen(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(quicConnKey{}).(*quic.Conn); ok {
			defer s.dropFresh(c)
		}
		h.ServeHTTP(w, r)
	})
}

// awaitFresh waits until no accepted connection is fresh, FreshWait has
// passed or ctx ends, and reports how many were left fresh. The server
// must be closing (stopAccepting), so that a CONNECT that comes now is
// answered 503.
func (s *Server) awaitFresh(ctx context.Context) int {
	wait := s.freshWait
	if wait == 0 {
		wait = FreshWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for first := true; ; first = false {
		s.mu.Lock()
		n := len(s.fresh)
		if n == 0 {
			s.mu.Unlock()
			return 0
		}
		if first && s.onAwaitFresh != nil {
			s.onAwaitFresh(n)
		}
		if s.freshGone == nil {
			s.freshGone = make(chan struct{})
		}
		gone := s.freshGone
		s.mu.Unlock()
		select {
		case <-gone:
		case <-t.C:
			return n
		case <-ctx.Done():
			return n
		}
	}
}
