package bridge

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// httpSession is one session of the HTTP front (spec §10): a Streamable
// HTTP session, or a 2024-11-05 HTTP+SSE one (legacy), each with its own
// core and MCP-Flow session.
//
// s.mu guards the fields marked so; it is never held across I/O or a
// channel send, and it is taken after the front's mutex, never before.
type httpSession struct {
	id     string
	front  *HTTPFront
	core   *core
	legacy bool         // a client of the 2024-11-05 HTTP+SSE transport
	base   string       // the endpoint's URL, for download links (endpointURL: never a Host header)
	key    string       // a 2026-07-28 holder's client (clientKey); "" for the others
	budget *heldBudget  // SSE events and unwritten answers (MaxSessionHeld, under MaxHeld)
	bodies *heldBudget  // request bodies until answered (MaxClientBodies, under MaxBodiesInFlight)
	files  sessionFiles // execution streams past the inline limit
	mu     sync.Mutex
	// calls are the client's requests in flight, by id: where their
	// answers go. byToken finds a call by its progress token.
	calls   map[string]*httpCall
	byToken map[string]*httpCall
	// SSE streams, kept for resumption with Last-Event-ID: stream 0 is the
	// standalone GET stream, the others one per POST. Event ids are
	// "<stream>.<seq>", unique within the session.
	streams    map[int]*sseStream
	standalone *sseStream // streams[0]; set once
	nextStream int
	finished   []*sseStream // finished POST streams kept for resumption, oldest first
	getOpen    bool
	delivered  int // events of stream 0 sent on some GET
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
		streams: map[int]*sseStream{0: st0}, standalone: st0, lastActive: time.Now()}
	// A session whose MCP-Flow session ended is over: its id gets 404 and
	// the client starts over with a new initialize (spec §10).
	s.core = newCore(h.cfg.Stdio, s, func(err error) {
		h.end(s, fmt.Sprintf("its MCP-Flow session with %s ended: %v", h.cfg.Stdio.URL, err))
	})
	return s
}

var _ front = (*httpSession)(nil)

// emit sends one message of the core to where the client waits for it
// (route); it never blocks.
func (s *httpSession) emit(m jsonrpc.Message) { s.route(m) }

// emitBatch sends the responses to a batch one by one, each on the stream
// its request waits on.
func (s *httpSession) emitBatch(rs []*jsonrpc.Response) {
	for _, r := range rs {
		s.route(r)
	}
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

// Finished POST streams are kept for resumption within these bounds per
// session; the oldest go first.
const (
	keepFinished      = 64
	keepFinishedBytes = 32 << 20
)

// retire keeps a finished POST stream for resumption, within the session's
// bounds; the oldest finished streams go first.
func (s *httpSession) retire(st *sseStream) {
	s.mu.Lock()
	s.finished = append(s.finished, st)
	total := 0
	for _, f := range s.finished {
		total += f.bytes()
	}
	var gone []*sseStream
	for len(s.finished) > 1 && (len(s.finished) > keepFinished || total > keepFinishedBytes) {
		old := s.finished[0]
		total -= old.bytes()
		delete(s.streams, old.id)
		gone = append(gone, old)
		s.finished[0] = nil
		s.finished = s.finished[1:]
	}
	s.mu.Unlock()
	for _, old := range gone {
		old.release()
	}
}

// evict frees what the session holds only for resumption, to make room
// for new events past a held-bytes cap: the events already written out, on
// every stream (events a client has not read yet are never dropped).
func (s *httpSession) evict() {
	s.mu.Lock()
	all := make([]*sseStream, 0, len(s.streams))
	for _, st := range s.streams {
		all = append(all, st)
	}
	s.mu.Unlock()
	for _, st := range all {
		st.dropDelivered()
	}
}

// register adds a call of the client in flight: its answer goes to post
// (nil: the standalone stream). s.mu must be held.
func (s *httpSession) registerLocked(id string, c *httpCall, params json.RawMessage) {
	if tok := progressToken(params); tok != nil {
		c.token = string(tok)
		s.byToken[c.token] = c
	}
	s.calls[id] = c
	s.front.calls.Add(1)
	if c.post != nil {
		c.post.pending++
	}
}

// settleLocked forgets the call id (answered or cancelled). s.mu must be
// held. Its POST stream counts it as answered only once its answer is in
// the stream's log (answered): the stream never ends before an answer.
func (s *httpSession) settleLocked(id string) *httpCall {
	c := s.calls[id]
	if c == nil {
		return nil
	}
	delete(s.calls, id)
	if c.token != "" && s.byToken[c.token] == c {
		delete(s.byToken, c.token)
	}
	if c.hold != nil {
		c.hold.settledLocked()
	}
	return c
}

// answered counts one request of the POST stream p as answered, and ends
// the stream when it was the last.
func (s *httpSession) answered(p *postStream) {
	if p == nil {
		return
	}
	s.mu.Lock()
	p.pending--
	last := p.pending == 0
	s.mu.Unlock()
	if last {
		s.complete(p)
	}
}

// complete ends a POST stream whose requests are all answered.
func (s *httpSession) complete(p *postStream) {
	p.finish()
	s.retire(p.sseStream)
	p.done()
}

// cancelled ends the wait for a request the client cancelled: MCP sends no
// response to it, so its POST stream ends once its other requests are
// answered (at once when it was alone).
func (s *httpSession) cancelled(params json.RawMessage) {
	var p flow.CancelParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s.mu.Lock()
	c := s.settleLocked(p.RequestID.Raw())
	s.mu.Unlock()
	if c == nil {
		return
	}
	s.answered(c.post)
	s.front.callsDone()
}

// route sends one message of the core to where the client waits for it:
// a response on its request's stream, a progress notification on the
// stream of the request it is about, a server request on the stream of a
// request in flight, anything else on the standalone stream. It never
// blocks: the stream's log holds the event for its followers.
func (s *httpSession) route(m jsonrpc.Message) {
	var post *postStream
	var response bool
	s.mu.Lock()
	switch m := m.(type) {
	case *jsonrpc.Response:
		c := s.settleLocked(m.ID.Raw())
		if c == nil {
			s.mu.Unlock()
			// A response to a request cancelled or no longer waited for:
			// a response never goes on the standalone stream.
			s.front.log.Debug("a response no request waits for", "id", m.ID.String())
			return
		}
		defer s.front.callsDone()
		if c.init != nil {
			s.mu.Unlock()
			c.init <- m // capacity 1, one answer: never blocks
			return
		}
		post, response = c.post, true
	case *jsonrpc.Request:
		if m.Method == protocol.MethodProgress {
			var p struct {
				Token json.RawMessage `json:"progressToken"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if c := s.byToken[string(p.Token)]; c != nil {
				post = c.post
			}
		} else if m.IsCall() {
			// A server request (sampling, elicitation) most likely serves a
			// request in flight: send it on that request's stream, where
			// the client is listening for sure (MCP 2025-11-25 transports).
			for _, c := range s.calls {
				if c.post != nil {
					post = c.post
					break
				}
			}
		}
	}
	st := s.standalone
	if post != nil {
		st = post.sseStream
	}
	s.mu.Unlock()
	s.add(st, m)
	if response {
		s.answered(post)
	}
}

// add puts one message on a stream within the held-bytes caps: past them,
// once what is held only for resumption is freed (the session's, then past
// MaxHeld every session's), a response becomes a -32603 error naming the
// cap and anything else is dropped.
func (s *httpSession) add(st *sseStream, m jsonrpc.Message) {
	e := jsonrpc.AppendJSON(nil, m)
	if !s.budget.take(len(e)) {
		s.evict()
		if !s.budget.take(len(e)) {
			// Past MaxHeld, what every session keeps for resumption only
			// gives way too.
			for _, o := range s.front.all() {
				o.evict()
			}
			if !s.budget.take(len(e)) {
				s.refused(st, m, len(e))
				return
			}
		}
	}
	st.appendEvent(e)
}

func (s *httpSession) refused(st *sseStream, m jsonrpc.Message, n int) {
	r, ok := m.(*jsonrpc.Response)
	if !ok {
		s.front.log.Warn("SSE event refused", "why", heldWhy(s, n))
		return
	}
	e := heldRefusal(s, r, n)
	s.budget.force(len(e))
	st.appendEvent(e)
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
		if fs := s.core.session(); fs != nil {
			fs.Close()
		}
	}
	h.cores.Add(1)
	go func() {
		defer h.cores.Done()
		s.core.finish()
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
