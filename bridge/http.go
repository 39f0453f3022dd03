package bridge

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
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
	return &HTTPFront{cfg: cfg, log: log, sessions: map[string]*httpSession{}}
}

// Protocol versions of MCP this front accepts in MCP-Protocol-Version.
var httpVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

type httpSession struct {
	id   string
	core *Stdio
	mu   sync.Mutex
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
	getOpen    bool
	delivered  int // events of stream 0 sent on some GET
}

// sseStream is the event log of one SSE stream. A writer follows it from a
// position; appends wake the writers.
type sseStream struct {
	id     int
	mu     sync.Mutex
	events [][]byte
	done   bool
	wake   chan struct{}
}

// maxEvents bounds what a stream keeps for replay.
const maxEvents = 4096

func newSSEStream(id int) *sseStream { return &sseStream{id: id, wake: make(chan struct{})} }

func (st *sseStream) append(m jsonrpc.Message) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.events) < maxEvents {
		st.events = append(st.events, jsonrpc.AppendJSON(nil, m))
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

// follow writes the events after position from (0: all) until the stream is
// done or ctx ends, and returns the position reached.
func (st *sseStream) follow(ctx context.Context, w http.ResponseWriter, from int) int {
	fl, _ := w.(http.Flusher)
	for {
		st.mu.Lock()
		evs, done, wake := st.events[min(from, len(st.events)):], st.done, st.wake
		st.mu.Unlock()
		for _, e := range evs {
			from++
			fmt.Fprintf(w, "id: %d.%d\ndata: %s\n\n", st.id, from, e)
		}
		if fl != nil && len(evs) > 0 {
			fl.Flush()
		}
		if done {
			return from
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return from
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
		h.post(w, r)
	case http.MethodGet:
		h.getStream(w, r)
	case http.MethodDelete:
		if s := h.session(w, r); s != nil {
			h.mu.Lock()
			delete(h.sessions, s.id)
			h.mu.Unlock()
			s.standalone.finish() // ends an open GET stream
			go s.core.finish()
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (h *HTTPFront) post(w http.ResponseWriter, r *http.Request) {
	accept := r.Header.Get("Accept")
	if !strings.Contains(accept, "application/json") || !strings.Contains(accept, "text/event-stream") {
		http.Error(w, "Accept must list application/json and text/event-stream", http.StatusNotAcceptable)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxMessage+1))
	if err != nil || len(body) > MaxMessage {
		http.Error(w, "body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	p, err := codec.Default(codec.JSON).Decode(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeParseError, err.Error())))
		return
	}
	msgs, replies := jsonrpc.Validate(p)
	if len(replies) > 0 {
		writeJSON(w, http.StatusBadRequest, replies[0])
		return
	}
	var s *httpSession
	isInit := !p.Batch && len(msgs) == 1 && isRequest(msgs[0], flow.MethodInitialize)
	if isInit {
		st0 := newSSEStream(0)
		s = &httpSession{id: newSessionID(), byID: map[string]chan jsonrpc.Message{}, byToken: map[string]chan jsonrpc.Message{},
			streams: map[int]*sseStream{0: st0}, standalone: st0}
		s.core = NewStdio(h.cfg.Stdio)
		s.core.emit = s.route
	} else if s = h.session(w, r); s == nil {
		return
	}
	if v := s.core.version(); p.Batch && !BatchesAllowed(v) {
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
			h.mu.Lock()
			h.sessions[s.id] = s
			h.mu.Unlock()
			w.Header().Set("MCP-Session-Id", s.id)
		}
		writeJSON(w, http.StatusOK, res)
		return
	}
	// The stream's events are collected whether or not the client stays:
	// it may come back with Last-Event-ID.
	go func() {
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
	st.follow(r.Context(), w, 0)
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
	// Resumption: Last-Event-ID "<stream>.<seq>" replays that stream only,
	// from after that event.
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		sid, seq, ok := parseEventID(last)
		s.mu.Lock()
		st := s.streams[sid]
		s.mu.Unlock()
		if !ok || st == nil {
			http.Error(w, "unknown Last-Event-ID", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		st.follow(r.Context(), w, seq)
		return
	}
	s.mu.Lock()
	if s.getOpen {
		s.mu.Unlock()
		http.Error(w, "a stream is already open for this session", http.StatusConflict)
		return
	}
	s.getOpen = true
	from := s.delivered
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 1000\n\n")
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	reached := s.standalone.follow(r.Context(), w, from)
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
