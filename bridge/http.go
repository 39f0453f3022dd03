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
	get     chan jsonrpc.Message // the standalone SSE stream, if open
	queue   []jsonrpc.Message    // for GET, while none is open
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
	}
	if s.get != nil {
		select {
		case s.get <- m:
			return
		default:
		}
	}
	if len(s.queue) < 1024 {
		s.queue = append(s.queue, m)
	}
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
	isInit := len(msgs) == 1 && isRequest(msgs[0], flow.MethodInitialize)
	if isInit {
		s = &httpSession{id: newSessionID(), byID: map[string]chan jsonrpc.Message{}, byToken: map[string]chan jsonrpc.Message{}}
		s.core = NewStdio(h.cfg.Stdio)
		s.core.emit = s.route
	} else if s = h.session(w, r); s == nil {
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
	s.mu.Unlock()
	defer func() {
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
	}()
	for _, m := range msgs {
		s.core.dispatch(context.WithoutCancel(r.Context()), m) // a disconnect is not a cancellation
	}
	if len(ids) == 0 {
		w.WriteHeader(http.StatusAccepted) // notifications and responses only
		return
	}
	if isInit {
		res := <-ch
		if resp, ok := res.(*jsonrpc.Response); ok && resp.Error == nil {
			h.mu.Lock()
			h.sessions[s.id] = s
			h.mu.Unlock()
			w.Header().Set("MCP-Session-Id", s.id)
		}
		writeJSON(w, http.StatusOK, res)
		return
	}
	// An SSE stream: related notifications, then the responses.
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	seq := 0
	for pending := len(ids); pending > 0; {
		select {
		case m := <-ch:
			seq++
			fmt.Fprintf(w, "id: %s-%d\ndata: %s\n\n", s.id, seq, jsonrpc.AppendJSON(nil, m))
			if fl != nil {
				fl.Flush()
			}
			if _, ok := m.(*jsonrpc.Response); ok {
				pending--
			}
		case <-r.Context().Done():
			return
		}
	}
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
	ch := make(chan jsonrpc.Message, 64)
	s.mu.Lock()
	if s.get != nil {
		s.mu.Unlock()
		http.Error(w, "a stream is already open for this session", http.StatusConflict)
		return
	}
	s.get = ch
	queued := s.queue
	s.queue = nil
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.get = nil
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	fmt.Fprintf(w, "retry: 1000\n\n")
	if fl != nil {
		fl.Flush()
	}
	seq := 0
	send := func(m jsonrpc.Message) {
		seq++
		fmt.Fprintf(w, "id: %s-get-%d\ndata: %s\n\n", s.id, seq, jsonrpc.AppendJSON(nil, m))
		if fl != nil {
			fl.Flush()
		}
	}
	for _, m := range queued {
		send(m)
	}
	for {
		select {
		case m := <-ch:
			send(m)
		case <-r.Context().Done():
			return
		}
	}
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
