package bridge

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// HTTPConfig configures a Streamable HTTP front (MCP 2025-11-25 transports):
// plain MCP clients reach an MCP-Flow server through it. Its limits are in
// spec §8 and §10.
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
	// MaxBody bounds a POST body of a session; a larger one gets 413
	// (default and ceiling: MaxMessage, 64 MiB). The session id is checked
	// before the body is read.
	MaxBody int
	// MaxInitBody bounds a POST body without a session id (it can only be
	// an initialize); a larger one gets 413 (default 1 MiB).
	MaxInitBody int
	// MaxBodiesInFlight bounds the bytes of request bodies being read and
	// decoded at once, over all sessions; a POST that would pass it gets
	// 503 with Retry-After (default 256 MiB).
	MaxBodiesInFlight int
	// MaxUninitialized bounds the 2024-11-05 HTTP+SSE streams open before
	// their initialize (they do not count against MaxSessions until it
	// succeeds); a GET past it gets 503 (default 16). InitTimeout ends such
	// a stream when no initialize succeeded in it (default 30 s).
	MaxUninitialized int
	InitTimeout      time.Duration
	// MaxSessionHeld bounds the bytes of SSE events one session holds (its
	// open streams' unsent events and what it keeps for resumption);
	// MaxHeld those of all sessions. Past either, once the session has
	// dropped what it held only for resumption, a response becomes a
	// -32603 error naming the cap and a notification is dropped (defaults
	// 64 MiB and 1 GiB).
	MaxSessionHeld int
	MaxHeld        int
	// MaxSessionOffload bounds the bytes of the execution streams past the
	// inline limit that one session keeps on disk for download; MaxOffload
	// those of all sessions. Past either, the stream fails and so does its
	// call, with -32603 (defaults 1 GiB and 4 GiB). The files live in a
	// directory of the session under Stdio.StreamDir (default: the temporary directory), removed with it.
	MaxSessionOffload int64
	MaxOffload        int64
	// MaxClientBodies bounds the bytes of request bodies one client has in
	// flight (spec §11.6 says who a client is): read, decoded, or waiting
	// for their answers; past it a POST gets 503 with Retry-After. A body
	// counts until its requests are answered, not only while it is read
	// (default and floor: MaxBody).
	MaxClientBodies int
	// PublicURL is the endpoint's URL as clients reach it (scheme, host,
	// port and path), when that is not the listener's own address: behind a
	// reverse proxy, or a name in DNS. Download links name it; without it
	// they name the address of the listener the client connected to, never
	// a request's Host header. Its host is also allowed in Host headers.
	PublicURL string
	// ClientKey names the client a request comes from, for the per-client
	// budgets of the 2026-07-28 era (spec §11.6): requests with the same key
	// share one MCP-Flow session, one offload budget, one held-bytes budget
	// and one bodies budget. Default: the remote IP address (clients behind
	// one NAT or proxy share them); an authenticated deployment returns the
	// verified token's subject.
	ClientKey func(*http.Request) string
	// DownloadLifetime bounds how long an offloaded stream stays
	// downloadable (and on disk) after its result was sent; a complete
	// download (a GET without Range that received every byte) removes it at
	// once (default 10 minutes).
	DownloadLifetime time.Duration
	// WriteTimeout bounds one write of an answer or an SSE event to a
	// client that does not read: past it the response ends; a 2026-07-28
	// request still running is cancelled ($/cancel), a 2025 stream's events
	// stay held for resumption within MaxSessionHeld (default 30 s).
	WriteTimeout time.Duration
}

// HTTPFront is an http.Handler serving one MCP endpoint (POST, GET and
// DELETE on one path). Shutdown drains it; Close ends it at once. Its
// methods are safe for concurrent use.
type HTTPFront struct {
	cfg           HTTPConfig
	log           *slog.Logger
	held          *heldBudget  // all sessions' SSE events and unwritten answers (MaxHeld)
	offloaded     *heldBudget  // all sessions' offloaded streams (MaxOffload)
	bodies        *heldBudget  // request bodies in flight, until answered (MaxBodiesInFlight)
	public        *url.URL     // PublicURL, parsed; nil: the listener's address
	calls         atomic.Int64 // the clients' requests in flight, over all sessions
	wakeMu        sync.Mutex
	wake          chan struct{}  // closed (and replaced) when calls drops to 0
	cores         sync.WaitGroup // the cores of ended sessions, finishing
	mu            sync.Mutex
	sessions      map[string]*httpSession
	downloads     map[string]*download    // offloaded streams by token
	finishing     map[*httpSession]bool   // ended, their cores not yet finished
	uninitialized int                     // legacy sessions before their initialize
	stateless     map[string]*httpSession // the 2026-07-28 clients' holders by ClientKey (statelessHolder)
	closing       bool
}

// NewHTTPFront returns the handler. It panics when PublicURL is set but
// fails CheckPublicURL (a programming error, as a bad pattern is to
// http.ServeMux): check a URL from a user with CheckPublicURL first.
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
	if cfg.MaxInitBody <= 0 {
		cfg.MaxInitBody = min(1<<20, cfg.MaxBody)
	}
	if cfg.MaxBodiesInFlight <= 0 {
		cfg.MaxBodiesInFlight = 256 << 20
	}
	if cfg.MaxUninitialized <= 0 {
		cfg.MaxUninitialized = 16
	}
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = 30 * time.Second
	}
	if cfg.MaxSessionHeld <= 0 {
		cfg.MaxSessionHeld = 64 << 20
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = 1 << 30
	}
	if cfg.MaxSessionOffload <= 0 {
		cfg.MaxSessionOffload = 1 << 30
	}
	if cfg.MaxOffload <= 0 {
		cfg.MaxOffload = 4 << 30
	}
	if cfg.MaxClientBodies < cfg.MaxBody {
		cfg.MaxClientBodies = cfg.MaxBody
	}
	if cfg.DownloadLifetime <= 0 {
		cfg.DownloadLifetime = DefaultDownloadLifetime
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	var public *url.URL
	if cfg.PublicURL != "" {
		u, err := CheckPublicURL(cfg.PublicURL)
		if err != nil {
			panic("bridge: HTTPConfig.PublicURL: " + err.Error())
		}
		public = u
	}
	cfg.Stdio = cfg.Stdio.withDefaults()
	return &HTTPFront{cfg: cfg, log: log, held: &heldBudget{max: int64(cfg.MaxHeld)}, wake: make(chan struct{}),
		offloaded: &heldBudget{max: cfg.MaxOffload}, bodies: &heldBudget{max: int64(cfg.MaxBodiesInFlight)}, public: public,
		downloads: map[string]*download{}, sessions: map[string]*httpSession{}, finishing: map[*httpSession]bool{},
		stateless: map[string]*httpSession{}}
}

// CheckPublicURL parses an endpoint URL for HTTPConfig.PublicURL: absolute,
// http or https, with a host and without user information, query or
// fragment.
func CheckPublicURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("%q: want an absolute http or https URL with a host and without user, query or fragment", s)
	}
	return u, nil
}

// Defaults of HTTPConfig (spec §8.3, §10).
const (
	DefaultDownloadLifetime = 10 * time.Minute
	DefaultWriteTimeout     = 30 * time.Second
)

// Protocol versions of MCP this front accepts in MCP-Protocol-Version.
var httpVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

func (h *HTTPFront) checkHeaders(w http.ResponseWriter, r *http.Request) bool {
	if !h.originAllowed(r) {
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return false
	}
	if why := h.hostRefused(r); why != "" {
		http.Error(w, "host not allowed: "+why, http.StatusForbidden)
		return false
	}
	if h.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+h.cfg.Token)) != 1 {
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return false
	}
	if v := r.Header.Get("MCP-Protocol-Version"); v != "" && !slices.Contains(httpVersions, v) && !statelessVersion(v) {
		// A 2026-07-28 client recognises this answer and does not fall
		// back (2026-07-28 transports, Backward Compatibility).
		writeJSON(w, http.StatusBadRequest, unsupportedVersion(jsonrpc.NullID, v))
		return false
	}
	return true
}

// ServeHTTP implements the endpoint.
func (h *HTTPFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.checkHeaders(w, r) {
		return
	}
	stateless := statelessVersion(r.Header.Get("MCP-Protocol-Version"))
	switch r.Method {
	case http.MethodPost:
		if stateless { // an MCP-Session-Id is ignored (2026-07-28 transports)
			h.statelessPost(w, r)
			return
		}
		if r.URL.Query().Has("session") {
			h.legacyPost(w, r)
			return
		}
		h.post(w, r)
	case http.MethodGet:
		if token := r.URL.Query().Get("download"); token != "" {
			h.serveDownload(w, r, token)
			return
		}
		if stateless { // 2026-07-28 has no GET stream
			w.Header().Set("Allow", "POST")
			http.Error(w, "MCP 2026-07-28 has no GET stream", http.StatusMethodNotAllowed)
			return
		}
		if r.Header.Get("MCP-Session-Id") == "" && r.Header.Get("Last-Event-ID") == "" &&
			strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			h.legacyStream(w, r)
			return
		}
		h.getStream(w, r)
	case http.MethodDelete:
		if stateless { // nor sessions to delete
			w.Header().Set("Allow", "POST")
			http.Error(w, "MCP 2026-07-28 has no sessions", http.StatusMethodNotAllowed)
			return
		}
		if s := h.session(w, r); s != nil {
			h.end(s, "deleted by the client")
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// session finds the session a request names in MCP-Session-Id, before its
// body is read; it answers the client itself (400, 404) when there is none.
func (h *HTTPFront) session(w http.ResponseWriter, r *http.Request) *httpSession {
	id := r.Header.Get("MCP-Session-Id")
	if id == "" {
		http.Error(w, "missing MCP-Session-Id", http.StatusBadRequest)
		return nil
	}
	s := h.lookup(id)
	if s == nil || s.legacy { // an HTTP+SSE session has no Streamable HTTP id
		http.Error(w, "unknown or ended session", http.StatusNotFound)
		return nil
	}
	return s
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

// readBody reads a POST's body of at most limit bytes, charged to budget
// (a client's bodies budget under MaxBodiesInFlight, or that alone); it
// answers the client itself (413, 503, 400) when it cannot. release gives
// the body's bytes back: call it once the body's requests are answered
// (spec §8.3: a decoded request counts until then).
func (h *HTTPFront) readBody(w http.ResponseWriter, r *http.Request, limit int, budget *heldBudget) (body []byte, release func(), ok bool) {
	if r.ContentLength > int64(limit) {
		http.Error(w, fmt.Sprintf("body over %d bytes", limit), http.StatusRequestEntityTooLarge)
		return nil, nil, false
	}
	reserved := 0
	release = sync.OnceFunc(func() { budget.credit(reserved) })
	reserve := func(n int) bool {
		if !budget.take(n) {
			return false
		}
		reserved += n
		return true
	}
	busy := func() {
		release()
		why := fmt.Sprintf("request bodies in flight over %d bytes (MaxBodiesInFlight)", h.cfg.MaxBodiesInFlight)
		if budget != h.bodies {
			why = fmt.Sprintf("request bodies in flight over %d bytes for this client (MaxClientBodies) or %d in all (MaxBodiesInFlight)", h.cfg.MaxClientBodies, h.cfg.MaxBodiesInFlight)
		}
		h.tooMany(w, why)
	}
	size := 32 << 10
	if r.ContentLength >= 0 {
		size = int(r.ContentLength) + 1 // room to see the end
	}
	size = min(size, limit+1)
	if !reserve(size) {
		busy()
		return nil, nil, false
	}
	body = make([]byte, 0, size)
	for {
		if len(body) == cap(body) {
			if len(body) > limit {
				release()
				http.Error(w, fmt.Sprintf("body over %d bytes", limit), http.StatusRequestEntityTooLarge)
				return nil, nil, false
			}
			grow := min(cap(body), limit+1-cap(body))
			if !reserve(grow) {
				busy()
				return nil, nil, false
			}
			body = slices.Grow(body, grow)
			if extra := cap(body) - reserved; extra > 0 { // what append rounded up; may pass the cap by that
				budget.force(extra)
				reserved += extra
			}
		}
		n, err := r.Body.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			release()
			http.Error(w, "unreadable body: "+err.Error(), http.StatusBadRequest)
			return nil, nil, false
		}
	}
	if len(body) > limit {
		release()
		http.Error(w, fmt.Sprintf("body over %d bytes", limit), http.StatusRequestEntityTooLarge)
		return nil, nil, false
	}
	return body, release, true
}

// readMessages reads a POST's body within limit (readBody) and decodes it
// (parse); it answers the client itself when it cannot. release gives the
// body's bytes back to MaxBodiesInFlight.
func (h *HTTPFront) readMessages(w http.ResponseWriter, r *http.Request, limit int, budget *heldBudget) (p jsonrpc.Payload, msgs []jsonrpc.Message, release func(), ok bool) {
	body, release, ok := h.readBody(w, r, limit, budget)
	if !ok {
		return p, nil, nil, false
	}
	if p, msgs, ok = parse(w, body); !ok {
		release()
		return p, nil, nil, false
	}
	return p, msgs, release, true
}

// parse decodes a POST's JSON-RPC payload; it answers the client itself
// (400) when it is not valid JSON-RPC.
func parse(w http.ResponseWriter, body []byte) (jsonrpc.Payload, []jsonrpc.Message, bool) {
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

// duplicateLocked returns the first request of msgs whose id is in flight
// on the session or repeated in msgs (nil: none). s.mu must be held.
func (s *httpSession) duplicateLocked(msgs []jsonrpc.Message) *jsonrpc.Request {
	seen := map[string]bool{}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			id := req.ID.Raw()
			if s.calls[id] != nil || seen[id] {
				return req
			}
			seen[id] = true
		}
	}
	return nil
}

// duplicate answers a POST that reuses a request id in flight: 400 and a
// -32600 error for that id; nothing in the POST is processed.
func duplicate(w http.ResponseWriter, req *jsonrpc.Request) {
	writeJSON(w, http.StatusBadRequest, jsonrpc.NewErrorResponse(req.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest,
		"request id "+req.ID.String()+" is already in flight in this session (JSON-RPC 2.0: ids are unique among requests in flight)")))
}

// dispatch passes the client's messages to the core; a
// notifications/cancelled also ends the wait for its request.
func (s *httpSession) dispatch(r *http.Request, msgs []jsonrpc.Message) {
	for _, m := range msgs {
		s.core.dispatch(context.WithoutCancel(r.Context()), m) // a disconnect is not a cancellation
		if n, ok := m.(*jsonrpc.Request); ok && !n.IsCall() && n.Method == protocol.MethodCancelled {
			s.cancelled(n.Params)
		}
	}
}

// primingSince is the first MCP version whose SSE streams start with a
// priming event (2025-11-25 transports).
const primingSince = "2025-11-25"

// acceptsBoth reports whether a POST's Accept lists both answers a
// Streamable HTTP client must take (every MCP revision's transports).
func acceptsBoth(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && strings.Contains(accept, "text/event-stream")
}

func (h *HTTPFront) post(w http.ResponseWriter, r *http.Request) {
	if !acceptsBoth(r) {
		http.Error(w, "Accept must list application/json and text/event-stream", http.StatusNotAcceptable)
		return
	}
	// The session is found before the body is read: a POST for no session
	// costs nothing; one without a session id can only be an initialize.
	var s *httpSession
	limit, budget := h.cfg.MaxInitBody, h.bodies
	if r.Header.Get("MCP-Session-Id") != "" {
		if s = h.session(w, r); s == nil {
			return
		}
		limit, budget = h.cfg.MaxBody, s.bodies
	}
	if h.isClosing() {
		h.tooMany(w, "the bridge is shutting down")
		return
	}
	p, msgs, release, ok := h.readMessages(w, r, limit, budget)
	if !ok {
		return
	}
	defer func() { release() }()
	if !p.Batch && len(msgs) == 1 && isRequest(msgs[0], protocol.MethodInitialize) {
		h.initialize(w, r, msgs[0].(*jsonrpc.Request))
		return
	}
	if s == nil {
		if req, ok := msgs[0].(*jsonrpc.Request); ok && !p.Batch && req.IsCall() && flow.IsStatelessRequest(req) {
			// A 2026-07-28 request without its MCP-Protocol-Version header.
			writeJSON(w, http.StatusBadRequest, jsonrpc.NewErrorResponse(req.ID, jsonrpc.NewError(protocol.CodeHeaderMismatch,
				"the MCP-Protocol-Version header is missing (a request whose _meta names "+protocol.MCP20260728+" must carry it)")))
			return
		}
		http.Error(w, "missing MCP-Session-Id", http.StatusBadRequest)
		return
	}
	defer s.enter()()
	if v := s.core.version(); p.Batch && !batchesAllowed(v) {
		// 2025-03-26 allowed a batch in a POST; 2025-06-18 and later do not.
		writeJSON(w, http.StatusBadRequest, batchError(v))
		return
	}
	// The requests of this POST are answered on its stream, which ends
	// once each is answered or cancelled; until then the stream counts as
	// activity and the body's bytes stay charged (the decoded requests are
	// held until answered).
	leave, held := s.enter(), release
	release = func() {}
	done := func() { leave(); held() }
	post := &postStream{done: done}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		done()
		http.Error(w, "unknown or ended session", http.StatusNotFound)
		return
	}
	if dup := s.duplicateLocked(msgs); dup != nil {
		s.mu.Unlock()
		done()
		duplicate(w, dup)
		return
	}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if post.sseStream == nil {
				s.nextStream++
				post.sseStream = newSSEStream(s.nextStream, s.budget)
				s.streams[post.id] = post.sseStream
			}
			s.registerLocked(req.ID.Raw(), &httpCall{post: post}, req.Params)
		}
	}
	s.mu.Unlock()
	if post.sseStream == nil {
		done()
		s.dispatch(r, msgs)
		w.WriteHeader(http.StatusAccepted) // notifications and responses only
		return
	}
	s.dispatch(r, msgs)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if s.core.version() >= primingSince {
		post.prime(w, 0)
	}
	// The stream's events are kept whether or not the client stays: it
	// may come back with Last-Event-ID.
	if _, err := post.follow(r.Context(), w, 0, h.cfg.WriteTimeout); err != nil {
		h.log.Debug("SSE stream cut", "err", err)
	}
}

// initialize opens a Streamable HTTP session with the client's initialize:
// its id comes back in MCP-Session-Id with a successful result.
func (h *HTTPFront) initialize(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) {
	if h.full() {
		h.tooManySessions(w)
		return
	}
	s := h.newSession(false, r)
	ch := make(chan *jsonrpc.Response, 1)
	s.mu.Lock()
	s.registerLocked(m.ID.Raw(), &httpCall{init: ch}, nil)
	s.mu.Unlock()
	s.core.dispatch(context.WithoutCancel(r.Context()), m)
	res := <-ch // the core answers every initialize
	if res.Error != nil {
		h.discard(s)
		writeJSON(w, http.StatusOK, res)
		return
	}
	if !h.register(s) {
		h.discard(s)
		h.tooManySessions(w)
		return
	}
	if s.core.session() == nil { // lost before it was registered
		h.end(s, "its MCP-Flow session ended during initialize")
	}
	w.Header().Set("MCP-Session-Id", s.id)
	writeJSON(w, http.StatusOK, res)
}

// discard ends the core of a session that was never registered.
func (h *HTTPFront) discard(s *httpSession) {
	h.cores.Add(1)
	go func() {
		defer h.cores.Done()
		s.core.finish()
		h.removeFiles(s)
	}()
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
		if _, err := st.follow(r.Context(), w, seq, h.cfg.WriteTimeout); err != nil {
			h.log.Debug("SSE stream cut", "err", err)
		}
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
	if s.core.version() >= primingSince {
		s.standalone.prime(w, from)
	} else if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	reached, err := s.standalone.follow(r.Context(), w, from, h.cfg.WriteTimeout)
	switch {
	case errors.Is(err, errEventsLost):
		// The client fell behind the replay window: what it missed is
		// gone, so the stream ends rather than skip events silently.
		h.log.Warn("standalone SSE stream cut", "err", err)
	case err != nil:
		h.log.Debug("SSE stream cut", "err", err)
	}
	s.mu.Lock()
	s.getOpen = false
	s.delivered = max(s.delivered, reached)
	s.mu.Unlock()
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

// Shutdown drains the front: new sessions and new requests get 503, the
// requests in flight are answered (their POST streams end), then every
// session ends and its MCP-Flow session shuts down gracefully (spec §7.2).
// When ctx ends first, Shutdown closes what is left (Close) and returns
// ctx's error. Serve the front's http.Server until Shutdown returns, and
// shut the server down alongside (its open GET streams end with their
// sessions).
func (h *HTTPFront) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	for {
		h.wakeMu.Lock()
		wake := h.wake
		h.wakeMu.Unlock()
		if h.calls.Load() <= 0 {
			break
		}
		select {
		case <-wake:
		case <-ctx.Done():
			h.Close()
			return ctx.Err()
		}
	}
	for _, s := range h.all() {
		h.end(s, "the bridge is shutting down")
	}
	done := make(chan struct{})
	go func() {
		h.cores.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		h.Close()
		return ctx.Err()
	}
}

// Close ends every session at once: their MCP-Flow sessions are closed,
// the requests in flight fail, the streams end. It returns once every
// session's core has finished.
func (h *HTTPFront) Close() error {
	h.mu.Lock()
	h.closing = true
	ending := make([]*httpSession, 0, len(h.finishing))
	for s := range h.finishing {
		ending = append(ending, s)
	}
	h.mu.Unlock()
	for _, s := range h.all() {
		h.endSession(s, "the bridge closed", true)
	}
	for _, s := range ending {
		if fs := s.core.session(); fs != nil {
			fs.Close()
		}
	}
	h.cores.Wait()
	return nil
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

func isRequest(m jsonrpc.Message, method string) bool {
	r, ok := m.(*jsonrpc.Request)
	return ok && r.IsCall() && r.Method == method
}

func writeJSON(w http.ResponseWriter, status int, m jsonrpc.Message) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.AppendJSON(nil, m))
}

// originAllowed applies the one origin policy of spec §9, the same as the
// WebTransport server's: a request without Origin (a non-browser client) is
// allowed; a page on this machine (flow.LoopbackOrigin) is allowed when the
// front is reached on a loopback address; any other Origin must be in
// AllowedOrigins ("*" allows any).
func (h *HTTPFront) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || slices.Contains(h.cfg.AllowedOrigins, o) || slices.Contains(h.cfg.AllowedOrigins, "*") {
		return true
	}
	if !flow.LoopbackOrigin(o) {
		return false
	}
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
