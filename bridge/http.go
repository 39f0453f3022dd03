package bridge

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// HTTPConfig configures a Streamable HTTP front (MCP 2025-11-25 transports):
// plain MCP clients reach an MCP-Flow server through it.
type HTTPConfig struct {
	Stdio StdioConfig // the MCP-Flow side, as for the stdio front
	// AllowedOrigins may send requests from browsers; others get 403. A
	// request without Origin is allowed.
	AllowedOrigins []string
	// Token, if set, is required as "Authorization: Bearer <token>" (401).
	Token string
	// MaxSessions bounds the sessions open at once; an initialize past it
	// gets 503 (default 256). Each holds an MCP-Flow session.
	MaxSessions int
	// IdleTimeout ends a session with no request and no open stream for
	// that long; its id then gets 404 (default 30 minutes).
	IdleTimeout time.Duration
	// MaxBody bounds a POST body; a larger one gets 413 (default and
	// ceiling: MaxMessage, 64 MiB).
	MaxBody int
}

// HTTPFront is an http.Handler serving one MCP endpoint (POST, GET and
// DELETE on one path).
type HTTPFront struct {
	cfg      HTTPConfig
	log      *slog.Logger
	mu       sync.Mutex
	sessions map[string]*httpSession
}

// NewHTTPFront returns the handler.
func NewHTTPFront(cfg HTTPConfig) *HTTPFront {
	log := cfg.Stdio.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 256
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Minute
	}
	if cfg.MaxBody <= 0 || cfg.MaxBody > MaxMessage {
		cfg.MaxBody = MaxMessage
	}
	return &HTTPFront{cfg: cfg, log: log, sessions: map[string]*httpSession{}}
}

// Protocol versions of MCP this front accepts in MCP-Protocol-Version.
var httpVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

type httpSession struct {
	id     string
	front  *HTTPFront
	core   *core
	files  *streamFiles // streams past the inline limit, deleted when the session ends
	legacy bool         // a client of the 2024-11-05 HTTP+SSE transport
	mu     sync.Mutex
	// waiting POSTs by request id, and by progress token for related
	// notifications.
	byID    map[string]chan jsonrpc.Message
	byToken map[string]chan jsonrpc.Message
	// SSE streams, kept for resumption with Last-Event-ID: stream 0 is the
	// standalone GET stream, the others one per POST. Event ids are
	// "<stream>.<seq>", unique within the session.
	streams    map[int]*sseStream // under mu
	standalone *sseStream         // streams[0]; set once
	nextStream int
	finished   []*sseStream // finished POST streams kept for resumption, oldest first
	getOpen    bool
	delivered  int // events of stream 0 sent on some GET
	// Idleness: active counts requests and streams in progress; the timer
	// ends the session once it has been idle for IdleTimeout.
	active     int
	lastActive time.Time
	idle       *time.Timer
}

// enter marks activity on the session; the returned function ends it.
func (s *httpSession) enter() func() {
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.active--
		s.lastActive = time.Now()
		s.mu.Unlock()
	}
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

// retire keeps a finished POST stream for resumption, within the session's
// bounds; the oldest finished streams go first.
func (s *httpSession) retire(st *sseStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = append(s.finished, st)
	total := 0
	for _, f := range s.finished {
		total += f.bytes()
	}
	for len(s.finished) > 1 && (len(s.finished) > keepFinished || total > keepFinishedBytes) {
		old := s.finished[0]
		total -= old.bytes()
		delete(s.streams, old.id)
		s.finished[0] = nil
		s.finished = s.finished[1:]
	}
}

// sseStream is the event log of one SSE stream. A writer follows it from a
// position; appends wake the writers. It keeps a window of the latest
// events for resumption (replayEvents, replayBytes); a follower that falls
// behind the window has lost events and is cut off.
type sseStream struct {
	id     int
	mu     sync.Mutex
	base   int // events before this sequence number are gone
	events [][]byte
	size   int
	done   bool
	wake   chan struct{}
}

// The replay window of one stream: the latest replayEvents events, within
// replayBytes (the newest event is always kept, whatever its size).
const (
	replayEvents = 1024
	replayBytes  = 16 << 20
)

// Finished POST streams are kept for resumption within these bounds per
// session; the oldest go first.
const (
	keepFinished      = 64
	keepFinishedBytes = 32 << 20
)

// errEventsLost: a follower asked for events that left the replay window.
var errEventsLost = errors.New("events no longer available for replay")

func newSSEStream(id int) *sseStream { return &sseStream{id: id, wake: make(chan struct{})} }

func (st *sseStream) append(m jsonrpc.Message) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e := jsonrpc.AppendJSON(nil, m)
	st.events = append(st.events, e)
	st.size += len(e)
	for len(st.events) > 1 && (len(st.events) > replayEvents || st.size > replayBytes) {
		st.size -= len(st.events[0])
		st.events[0] = nil
		st.events = st.events[1:]
		st.base++
	}
	close(st.wake)
	st.wake = make(chan struct{})
}

func (st *sseStream) finish() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.done = true
	close(st.wake)
	st.wake = make(chan struct{})
}

// bytes is what the stream holds for replay.
func (st *sseStream) bytes() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.size
}

// first is the position of the oldest event held.
func (st *sseStream) first() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.base
}

// available reports whether the events after position from are all still
// held.
func (st *sseStream) available(from int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return from >= st.base && from <= st.base+len(st.events)
}

// follow writes the events after position from (0: all) until the stream is
// done or ctx ends, and returns the position reached; errEventsLost when the
// next event has left the replay window.
func (st *sseStream) follow(ctx context.Context, w http.ResponseWriter, from int) (int, error) {
	fl, _ := w.(http.Flusher)
	for {
		st.mu.Lock()
		if from < st.base {
			st.mu.Unlock()
			return from, errEventsLost
		}
		evs, done, wake := st.events[min(from-st.base, len(st.events)):], st.done, st.wake
		st.mu.Unlock()
		for _, e := range evs {
			from++
			fmt.Fprintf(w, "id: %d.%d\ndata: %s\n\n", st.id, from, e)
		}
		if fl != nil && len(evs) > 0 {
			fl.Flush()
		}
		if done {
			return from, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return from, nil
		}
	}
}

// route sends one message of the core to where the client waits for it.
func (s *httpSession) route(m jsonrpc.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m := m.(type) {
	case *jsonrpc.Response:
		if ch := s.byID[m.ID.Raw()]; ch != nil {
			ch <- m
			return
		}
	case *jsonrpc.Request:
		if m.Method == flow.MethodProgress {
			var p struct {
				Token json.RawMessage `json:"progressToken"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if ch := s.byToken[string(p.Token)]; ch != nil {
				ch <- m
				return
			}
		}
		if m.IsCall() {
			// A server request (sampling, elicitation) most likely serves a
			// request in flight: send it on that request's stream, where
			// the client is listening for sure (MCP 2025-11-25 transports).
			for _, ch := range s.byID {
				ch <- m
				return
			}
		}
	}
	s.standalone.append(m)
}

func newSessionID() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:]) // visible ASCII
}

func (h *HTTPFront) checkHeaders(w http.ResponseWriter, r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) && !slices.Contains(h.cfg.AllowedOrigins, o) && !slices.Contains(h.cfg.AllowedOrigins, "*") {
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return false
	}
	// DNS rebinding: a loopback listener answers only loopback host names.
	host := r.Host
	if hp, _, err := net.SplitHostPort(r.Host); err == nil {
		host = hp
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok && la.IP.IsLoopback() {
			http.Error(w, "host not allowed", http.StatusForbidden)
			return false
		}
	}
	if h.cfg.Token != "" && r.Header.Get("Authorization") != "Bearer "+h.cfg.Token {
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return false
	}
	if v := r.Header.Get("MCP-Protocol-Version"); v != "" && !slices.Contains(httpVersions, v) {
		http.Error(w, "unsupported MCP-Protocol-Version "+v, http.StatusBadRequest)
		return false
	}
	return true
}

func (h *HTTPFront) session(w http.ResponseWriter, r *http.Request) *httpSession {
	id := r.Header.Get("MCP-Session-Id")
	if id == "" {
		http.Error(w, "missing MCP-Session-Id", http.StatusBadRequest)
		return nil
	}
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	if s == nil {
		http.Error(w, "unknown or ended session", http.StatusNotFound)
	}
	return s
}

// ServeHTTP implements the endpoint.
func (h *HTTPFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.checkHeaders(w, r) {
		return
	}
	switch r.Method {
	case http.MethodPost:
		if r.URL.Query().Has("session") {
			h.legacyPost(w, r)
			return
		}
		h.post(w, r)
	case http.MethodGet:
		if r.Header.Get("MCP-Session-Id") == "" && r.Header.Get("Last-Event-ID") == "" &&
			strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			h.legacyStream(w, r)
			return
		}
		h.getStream(w, r)
	case http.MethodDelete:
		if s := h.session(w, r); s != nil {
			h.end(s, "deleted by the client")
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// end removes a session: its id gets 404 from now on, an open GET stream
// ends, and its MCP-Flow session shuts down once its requests are done.
func (h *HTTPFront) end(s *httpSession, why string) {
	h.mu.Lock()
	_, ok := h.sessions[s.id]
	delete(h.sessions, s.id)
	h.mu.Unlock()
	if !ok {
		return
	}
	h.log.Debug("HTTP session ended", "why", why)
	s.mu.Lock()
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	s.standalone.finish()
	go func() {
		s.core.finish()
		if err := s.files.remove(); err != nil {
			h.log.Warn("removing the stream files", "err", err)
		}
	}()
}

// register adds an initialized session, unless MaxSessions are open.
func (h *HTTPFront) register(s *httpSession) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.sessions) >= h.cfg.MaxSessions {
		return false
	}
	h.sessions[s.id] = s
	s.mu.Lock()
	s.lastActive = time.Now()
	var check func()
	check = func() {
		if d := s.idleFor(); d < h.cfg.IdleTimeout {
			s.mu.Lock()
			s.idle = time.AfterFunc(h.cfg.IdleTimeout-d, check)
			s.mu.Unlock()
			return
		}
		h.end(s, "idle")
	}
	s.idle = time.AfterFunc(h.cfg.IdleTimeout, check)
	s.mu.Unlock()
	return true
}

// tooMany refuses a new session: 503 with Retry-After.
func (h *HTTPFront) tooMany(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "5")
	http.Error(w, fmt.Sprintf("too many sessions (%d open)", h.cfg.MaxSessions), http.StatusServiceUnavailable)
}

// full reports whether MaxSessions are open.
func (h *HTTPFront) full() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions) >= h.cfg.MaxSessions
}

// readBody reads a POST's JSON-RPC payload; it answers the client itself
// (413, 400) when the body is too large or not valid JSON-RPC.
func (h *HTTPFront) readBody(w http.ResponseWriter, r *http.Request) (jsonrpc.Payload, []jsonrpc.Message, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(h.cfg.MaxBody)+1))
	switch {
	case err != nil:
		http.Error(w, "unreadable body: "+err.Error(), http.StatusBadRequest)
		return jsonrpc.Payload{}, nil, false
	case len(body) > h.cfg.MaxBody:
		http.Error(w, fmt.Sprintf("body over %d bytes", h.cfg.MaxBody), http.StatusRequestEntityTooLarge)
		return jsonrpc.Payload{}, nil, false
	}
	p, err := codec.Default(codec.JSON).Decode(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeParseError, err.Error())))
		return jsonrpc.Payload{}, nil, false
	}
	msgs, replies := jsonrpc.Validate(p)
	if len(replies) > 0 {
		writeJSON(w, http.StatusBadRequest, replies[0])
		return jsonrpc.Payload{}, nil, false
	}
	return p, msgs, true
}

// newSession makes a session (not yet registered) with its core.
func (h *HTTPFront) newSession() *httpSession {
	st0 := newSSEStream(0)
	s := &httpSession{id: newSessionID(), front: h, byID: map[string]chan jsonrpc.Message{}, byToken: map[string]chan jsonrpc.Message{},
		streams: map[int]*sseStream{0: st0}, standalone: st0, files: &streamFiles{dir: h.cfg.Stdio.StreamDir}}
	// A session whose MCP-Flow session ended is over: its id gets 404 and
	// the client starts over with a new initialize (spec §10).
	s.core = newCore(h.cfg.Stdio, s, func(err error) {
		h.end(s, fmt.Sprintf("its MCP-Flow session with %s ended: %v", h.cfg.Stdio.URL, err))
	})
	return s
}

var _ front = (*httpSession)(nil)

// emit sends one message of the core to where the client waits for it.
func (s *httpSession) emit(m jsonrpc.Message) { s.route(m) }

// emitBatch sends the responses to a batch one by one, on the POST's stream.
func (s *httpSession) emitBatch(rs []*jsonrpc.Response) {
	for _, r := range rs {
		s.route(r)
	}
}

// offload writes a large execution stream to a file, as the stdio front
// does (for now: the files are deleted when the session ends).
func (s *httpSession) offload(_ context.Context, _ string, r io.Reader) (string, int64, error) {
	return s.files.offload(r)
}

// legacyStream serves a client of the 2024-11-05 HTTP+SSE transport, for
// backwards compatibility (2025-11-25 transports): its GET opens the
// session's one SSE stream, whose first event, "endpoint", names where to
// POST; every answer and server message comes on this stream, and the
// session ends with it.
func (h *HTTPFront) legacyStream(w http.ResponseWriter, r *http.Request) {
	s := h.newSession()
	s.legacy = true
	if !h.register(s) {
		h.tooMany(w)
		return
	}
	defer h.end(s, "HTTP+SSE stream closed")
	defer s.enter()()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "event: endpoint\ndata: %s?session=%s\n\n", r.URL.Path, s.id)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	if _, err := s.standalone.follow(r.Context(), w, 0); err != nil {
		h.log.Warn("HTTP+SSE stream cut", "err", err)
	}
}

// legacyPost takes a message of a 2024-11-05 HTTP+SSE client: 202, and the
// answer comes on the session's stream.
func (h *HTTPFront) legacyPost(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	s := h.sessions[r.URL.Query().Get("session")]
	h.mu.Unlock()
	if s == nil || !s.legacy {
		http.Error(w, "unknown or ended session", http.StatusNotFound)
		return
	}
	defer s.enter()()
	p, msgs, ok := h.readBody(w, r)
	if !ok {
		return
	}
	if v := s.core.version(); p.Batch && !batchesAllowed(v) {
		writeJSON(w, http.StatusBadRequest, batchError(v))
		return
	}
	w.WriteHeader(http.StatusAccepted)
	for _, m := range msgs {
		s.core.dispatch(context.WithoutCancel(r.Context()), m)
	}
}

func (h *HTTPFront) post(w http.ResponseWriter, r *http.Request) {
	accept := r.Header.Get("Accept")
	if !strings.Contains(accept, "application/json") || !strings.Contains(accept, "text/event-stream") {
		http.Error(w, "Accept must list application/json and text/event-stream", http.StatusNotAcceptable)
		return
	}
	p, msgs, ok := h.readBody(w, r)
	if !ok {
		return
	}
	var s *httpSession
	isInit := !p.Batch && len(msgs) == 1 && isRequest(msgs[0], flow.MethodInitialize)
	if isInit {
		if h.full() {
			h.tooMany(w)
			return
		}
		s = h.newSession()
	} else if s = h.session(w, r); s == nil {
		return
	} else {
		defer s.enter()()
	}
	if v := s.core.version(); p.Batch && !batchesAllowed(v) {
		// 2025-03-26 allowed a batch in a POST; 2025-06-18 and later do not.
		writeJSON(w, http.StatusBadRequest, batchError(v))
		return
	}
	// The requests of this POST, and where their answers come.
	ch := make(chan jsonrpc.Message, 64)
	var ids []string
	s.mu.Lock()
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			ids = append(ids, req.ID.Raw())
			s.byID[req.ID.Raw()] = ch
			if tok := progressToken(req.Params); tok != nil {
				s.byToken[string(tok)] = ch
			}
		}
	}
	var st *sseStream
	if !isInit && len(ids) > 0 {
		s.nextStream++
		st = newSSEStream(s.nextStream)
		s.streams[st.id] = st
	}
	s.mu.Unlock()
	release := func() {
		s.mu.Lock()
		for _, id := range ids {
			delete(s.byID, id)
		}
		for tok, c := range s.byToken {
			if c == ch {
				delete(s.byToken, tok)
			}
		}
		s.mu.Unlock()
	}
	for _, m := range msgs {
		s.core.dispatch(context.WithoutCancel(r.Context()), m) // a disconnect is not a cancellation
	}
	if len(ids) == 0 {
		release()
		w.WriteHeader(http.StatusAccepted) // notifications and responses only
		return
	}
	if isInit {
		res := <-ch
		release()
		if resp, ok := res.(*jsonrpc.Response); ok && resp.Error == nil {
			if !h.register(s) {
				go s.core.finish()
				h.tooMany(w)
				return
			}
			if s.core.session() == nil { // lost before it was registered
				h.end(s, "its MCP-Flow session ended during initialize")
			}
			w.Header().Set("MCP-Session-Id", s.id)
		} else {
			go s.core.finish()
		}
		writeJSON(w, http.StatusOK, res)
		return
	}
	// The stream's events are collected whether or not the client stays:
	// it may come back with Last-Event-ID.
	done := s.enter() // the stream counts as activity until it is complete
	go func() {
		defer done()
		defer s.retire(st)
		defer release()
		defer st.finish()
		for pending := len(ids); pending > 0; {
			m := <-ch
			st.append(m)
			if _, ok := m.(*jsonrpc.Response); ok {
				pending--
			}
		}
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = st.follow(r.Context(), w, 0)
}

func (h *HTTPFront) getStream(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		http.Error(w, "Accept must list text/event-stream", http.StatusNotAcceptable)
		return
	}
	s := h.session(w, r)
	if s == nil {
		return
	}
	defer s.enter()()
	// Resumption: Last-Event-ID "<stream>.<seq>" replays that stream only,
	// from after that event.
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		sid, seq, ok := parseEventID(last)
		s.mu.Lock()
		st := s.streams[sid]
		s.mu.Unlock()
		if !ok || st == nil || !st.available(seq) {
			http.Error(w, "unknown Last-Event-ID, or its events are no longer held", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = st.follow(r.Context(), w, seq)
		return
	}
	s.mu.Lock()
	if s.getOpen {
		s.mu.Unlock()
		http.Error(w, "a stream is already open for this session", http.StatusConflict)
		return
	}
	s.getOpen = true
	// From where the last GET stream stopped, or, if that has left the
	// replay window (a client that fell behind was cut off), from the
	// oldest event still held.
	from := max(s.delivered, s.standalone.first())
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 1000\n\n")
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	reached, err := s.standalone.follow(r.Context(), w, from)
	if err != nil {
		// The client fell behind the replay window: what it missed is
		// gone, so the stream ends rather than skip events silently.
		h.log.Warn("standalone SSE stream cut", "err", err)
	}
	s.mu.Lock()
	s.getOpen = false
	s.delivered = max(s.delivered, reached)
	s.mu.Unlock()
}

// parseEventID splits "<stream>.<seq>".
func parseEventID(id string) (int, int, bool) {
	a, b, ok := strings.Cut(id, ".")
	sid, err1 := strconv.Atoi(a)
	seq, err2 := strconv.Atoi(b)
	return sid, seq, ok && err1 == nil && err2 == nil && sid >= 0 && seq >= 0
}

func isRequest(m jsonrpc.Message, method string) bool {
	r, ok := m.(*jsonrpc.Request)
	return ok && r.IsCall() && r.Method == method
}

func writeJSON(w http.ResponseWriter, status int, m jsonrpc.Message) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.AppendJSON(nil, m))
}

// loopbackOrigin reports whether an Origin names this machine (a page served
// from localhost may use a local server; DNS rebinding cannot forge it).
func loopbackOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil {
		return false
	}
	h := u.Hostname()
	ip := net.ParseIP(h)
	return h == "localhost" || (ip != nil && ip.IsLoopback())
}
