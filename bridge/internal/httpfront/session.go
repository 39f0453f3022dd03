package httpfront

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// httpSession: one client of the HTTP front in any era (a 2025 session, a
// 2024-11-05 HTTP+SSE stream, a 2026-07-28 client's holder), each with its
// own core; its life (made, registered, idle, ended), and the front's table
// of sessions and their limits.

// httpSession is one session of the HTTP front (spec §10): a Streamable
// HTTP session, or a 2024-11-05 HTTP+SSE one (legacy), each with its own
// core and MCP-Flow session.
//
// s.mu guards the fields marked so; it is never held across I/O or a
// channel send, and it is taken after the front's mutex, never before.
type httpSession struct {
	id     string
	front  *HTTPFront
	core   *core.Core
	legacy bool   // a client of the 2024-11-05 HTTP+SSE transport
	base   string // the endpoint's URL, for download links (endpointURL: never a Host header)
	key    string // a 2026-07-28 holder's client (clientKey); "" for the others
	// subject is the subject of the token that opened the session ("":
	// no authentication); only its requests may use it (owns). cred is
	// its MCP-Flow dials' credential with PassToken (nil otherwise).
	subject string
	cred    *passCred
	stdio   core.StdioConfig // the MCP-Flow side of its core: the front's, with cred's token
	budget  *heldBudget      // SSE events and unwritten answers (MaxSessionHeld, under MaxHeld)
	bodies  *heldBudget      // request bodies until answered (MaxClientBodies, under MaxBodiesInFlight)
	files   sessionFiles     // execution streams past the inline limit
	mu      sync.Mutex
	// calls are the client's requests in flight, by id: where their
	// answers go. byToken finds a call by its progress token.
	calls   map[string]*httpCall
	byToken map[string]*httpCall
	tools   toolParams // a 2026-07-28 holder's tools' x-mcp-header arguments
	// SSE streams, kept for resumption with Last-Event-ID: stream 0 is the
	// standalone GET stream, the others one per POST. Event ids are
	// "<stream>.<seq>", unique within the session.
	streams    map[int]*sseStream
	standalone *sseStream // streams[0]; set once
	nextStream int
	finished   []*sseStream // finished POST streams kept for resumption, oldest first
	getOpen    bool
	getEnd     context.CancelFunc // ends the open GET stream (set with getOpen)
	getDone    chan struct{}      // closed once that GET has let go of stream 0
	delivered  int                // events of stream 0 sent on some GET
	// Idleness: active counts requests and streams in progress; the timer
	// ends the session once it has been idle for IdleTimeout.
	active      int
	lastActive  time.Time
	idle        *time.Timer
	initTimer   *time.Timer // a legacy session's InitTimeout
	initialized bool        // a legacy session, once its initialize succeeded
	ended       bool
}

// httpCall is one request of the client in flight.
type httpCall struct {
	post  *postStream            // the POST stream it is answered on (nil: the standalone stream, legacy)
	init  chan *jsonrpc.Response // an initialize: its answer (capacity 1)
	token string                 // its progress token, if any
	hold  *bodyHold              // a legacy POST's body, charged until its requests are settled
}

// bodyHold keeps a POST's body charged to the bodies budgets until each of
// its requests is settled (answered or cancelled). pending is guarded by
// the session's mu.
type bodyHold struct {
	pending int
	release func()
}

// settledLocked counts one request settled; the last one releases the
// body. s.mu must be held (release takes only the budgets' locks).
func (b *bodyHold) settledLocked() {
	if b.pending--; b.pending == 0 {
		b.release()
	}
}

// unlessLocked releases the body when no request of it is pending (none
// was registered, or all are settled: release runs once). s.mu must be
// held.
func (b *bodyHold) unlessLocked() {
	if b.pending == 0 {
		b.release()
	}
}

// postStream is the SSE stream of one POST: it ends once each of its
// requests is answered or cancelled.
type postStream struct {
	*sseStream
	pending int    // requests not yet answered (under the session's mu)
	done    func() // ends the stream's activity
}

func newSessionID() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:]) // visible ASCII
}

// newSession makes a session (not yet registered) with its core.
func (h *HTTPFront) newSession(legacy bool, r *http.Request) *httpSession {
	budget := &heldBudget{max: int64(h.cfg.MaxSessionHeld), parent: h.held}
	st0 := newSSEStream(0, budget)
	s := &httpSession{id: newSessionID(), front: h, legacy: legacy, budget: budget, base: h.endpointURL(r),
		bodies: &heldBudget{max: int64(h.cfg.MaxClientBodies), parent: h.bodies},
		files:  sessionFiles{budget: &heldBudget{max: int64(h.cfg.MaxSessionOffload), parent: h.offloaded}},
		calls:  map[string]*httpCall{}, byToken: map[string]*httpCall{},
		streams: map[int]*sseStream{0: st0}, standalone: st0, lastActive: time.Now(), stdio: h.cfg.Stdio}
	h.sessionSubject(s, r, &s.stdio)
	// A session whose MCP-Flow session ends reconnects, with the client's
	// initialize, and its client never notices (spec §10), as the stdio
	// front's host does not. With ExitOnDisconnect (the server's own TCP
	// side, whose MCP-Flow server is itself) it is over instead: its id gets
	// 404 and the client starts over with a new initialize.
	s.core = core.New(s.stdio, s, func(err error) {
		h.end(s, fmt.Sprintf("its MCP-Flow session with %s ended: %v", h.cfg.Stdio.URL, err))
	})
	return s
}

// enter marks activity on the session; the returned function ends it.
func (s *httpSession) enter() func() {
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
	return sync.OnceFunc(func() {
		s.mu.Lock()
		s.active--
		s.lastActive = time.Now()
		s.mu.Unlock()
	})
}

// idleFor is how long the session has been idle (0 while it is busy).
func (s *httpSession) idleFor() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active > 0 {
		return 0
	}
	return time.Since(s.lastActive)
}

// end removes a session: its id gets 404 from now on, an open GET stream
// ends, and its MCP-Flow session shuts down once its requests are done
// (at once with force).
func (h *HTTPFront) end(s *httpSession, why string) {
	h.endSession(s, why, false)
}

func (h *HTTPFront) endSession(s *httpSession, why string, force bool) {
	h.mu.Lock()
	_, ok := h.sessions[s.id]
	delete(h.sessions, s.id)
	if s.key != "" && h.stateless[s.key] == s { // the client's next request makes a new one
		delete(h.stateless, s.key)
		ok = true
	}
	if ok {
		h.finishing[s] = true
		if s.legacy && !s.initialized {
			h.uninitialized--
		}
	}
	h.mu.Unlock()
	if !ok {
		return
	}
	h.log.Debug("HTTP session ended", "why", why)
	s.mu.Lock()
	s.ended = true
	if s.idle != nil {
		s.idle.Stop()
	}
	if s.initTimer != nil {
		s.initTimer.Stop()
	}
	s.mu.Unlock()
	s.standalone.finish()
	h.forgetFiles(s)
	if force {
		if fs := s.core.Session(); fs != nil {
			fs.Close()
		}
	}
	h.cores.Add(1)
	go func() {
		defer h.cores.Done()
		s.core.Finish()
		h.removeFiles(s)
		h.mu.Lock()
		delete(h.finishing, s)
		h.mu.Unlock()
		// Nothing is resumed once the session is over: its events are
		// no longer counted, and go once their followers are done.
		s.budget.detach()
		s.bodies.detach()
		s.mu.Lock()
		s.streams, s.finished = map[int]*sseStream{}, nil
		s.mu.Unlock()
	}()
}

// register adds a session, unless MaxSessions are open (or, for a legacy
// session before its initialize, MaxUninitialized), and starts its timers.
func (h *HTTPFront) register(s *httpSession) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	if s.legacy {
		if h.uninitialized >= h.cfg.MaxUninitialized {
			return false
		}
		h.uninitialized++
	} else if h.openLocked() >= h.cfg.MaxSessions {
		return false
	}
	h.sessions[s.id] = s
	s.mu.Lock()
	h.watchIdleLocked(s)
	if s.legacy {
		s.initTimer = time.AfterFunc(h.cfg.InitTimeout, func() {
			s.mu.Lock()
			inited := s.initialized
			s.mu.Unlock()
			if !inited {
				h.end(s, "no initialize within InitTimeout")
			}
		})
	}
	s.mu.Unlock()
	return true
}

// watchIdleLocked starts the timer that ends s once it has been idle for
// IdleTimeout. s.mu must be held.
func (h *HTTPFront) watchIdleLocked(s *httpSession) {
	s.lastActive = time.Now()
	var check func()
	check = func() {
		if d := s.idleFor(); d < h.cfg.IdleTimeout {
			s.mu.Lock()
			if !s.ended {
				s.idle = time.AfterFunc(h.cfg.IdleTimeout-d, check)
			}
			s.mu.Unlock()
			return
		}
		h.end(s, "idle")
	}
	s.idle = time.AfterFunc(h.cfg.IdleTimeout, check)
}

// promote counts a legacy session whose initialize succeeded as a session
// (MaxSessions) instead of an uninitialized stream; false when MaxSessions
// are open.
func (h *HTTPFront) promote(s *httpSession) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.sessions[s.id]; !ok {
		return false
	}
	s.mu.Lock()
	already := s.initialized
	s.mu.Unlock()
	if already {
		return true
	}
	if h.openLocked() >= h.cfg.MaxSessions {
		return false
	}
	h.uninitialized--
	s.mu.Lock()
	s.initialized = true
	s.mu.Unlock()
	return true
}

func (h *HTTPFront) lookup(id string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

// tooMany refuses a new session: 503 with Retry-After.
func (h *HTTPFront) tooMany(w http.ResponseWriter, what string) {
	w.Header().Set("Retry-After", "5")
	http.Error(w, what, http.StatusServiceUnavailable)
}

func (h *HTTPFront) tooManySessions(w http.ResponseWriter) {
	h.tooMany(w, fmt.Sprintf("too many sessions (%d open)", h.cfg.MaxSessions))
}

// full reports whether MaxSessions are open, or the front is closing.
func (h *HTTPFront) full() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closing || h.openLocked() >= h.cfg.MaxSessions
}

// openLocked counts what MaxSessions bounds: the sessions past their
// initialize and the 2026-07-28 clients' holders. h.mu must be held.
func (h *HTTPFront) openLocked() int {
	return len(h.sessions) - h.uninitialized + len(h.stateless)
}

func (h *HTTPFront) isClosing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closing
}

// callsDone counts one request of a client answered or cancelled.
func (h *HTTPFront) callsDone() {
	if h.calls.Add(-1) == 0 {
		h.wakeMu.Lock()
		close(h.wake)
		h.wake = make(chan struct{})
		h.wakeMu.Unlock()
	}
}

// all lists the open sessions.
func (h *HTTPFront) all() []*httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	ss := make([]*httpSession, 0, len(h.sessions)+len(h.stateless))
	for _, s := range h.sessions {
		ss = append(ss, s)
	}
	for _, s := range h.stateless {
		ss = append(ss, s)
	}
	return ss
}

// discard ends the core of a session that was never registered.
func (h *HTTPFront) discard(s *httpSession) {
	h.cores.Add(1)
	go func() {
		defer h.cores.Done()
		s.core.Finish()
		h.removeFiles(s)
	}()
}
