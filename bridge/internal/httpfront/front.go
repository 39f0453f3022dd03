package httpfront

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/cors"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
	"github.com/mcp-flow/mcp-flow/bridge/plainio"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The Streamable HTTP front (spec §10, §11.6): its config, the handler that
// checks each request and hands it to its era (front_http_2025.go,
// front_http_legacy.go, front_http_stateless.go) or to a download, and the
// front's drain and close.

// HTTPConfig configures a Streamable HTTP front (MCP 2025-11-25 transports):
// plain MCP clients reach an MCP-Flow server through it. Its limits are in
// spec §8 and §10.
type HTTPConfig struct {
	Stdio core.StdioConfig // the MCP-Flow side, as for the stdio front
	// AllowedOrigins may send requests from browsers; others get 403. A
	// request without Origin is allowed.
	AllowedOrigins []string
	// Token, if set, is required as "Authorization: Bearer <token>" (401
	// "WWW-Authenticate: Bearer", compared in constant time): one shared
	// secret, no subject, no metadata, the simple case kept as it was. It
	// is for Auth's absence; NewHTTPFront panics when both are set.
	Token string
	// Auth, when its Verifier is set, asks every request for an OAuth
	// bearer token as mcp-flow-server does (docs/spec.md §9.1, §10
	// "Authentication on the fronts"): 401 or 403 with a WWW-Authenticate
	// challenge naming the resource metadata (Auth.ResourceMetadataURL,
	// default the well-known URL of Resource). A token must name a subject.
	// A 2025 session (and its downloads) belongs to the subject that
	// initialized it: another subject's request naming its id gets 404. A
	// 2026-07-28 client is its token's subject (ClientKey below).
	Auth bearer.Config
	// Resource is the front's resource identifier (RFC 9728 §1.2, its
	// endpoint URL: what its clients' tokens name as audience), and
	// AuthorizationServers the issuers whose tokens it takes: Metadata
	// serves them at Resource's well-known URL.
	Resource             string
	AuthorizationServers []string
	// PassToken: each MCP-Flow session of the front presents its own
	// client's token to the server (the latest valid token of the subject it
	// serves, read on each dial), for a server whose audience is the
	// front's own (mcp-flow-server's own TCP side, §10.1). Off (the
	// default): every session presents Stdio.Token, the front's own
	// credential, and the server's tools see the front's identity. It needs
	// Auth; see docs/spec.md §10 for why no client can borrow another's
	// identity either way.
	PassToken bool
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
	// HostNames are further host names the front answers to in Host
	// headers, besides its listener's address and PublicURL's host (spec
	// §9): mcp-flow-server passes its certificate's DNS names. They never
	// enter download links.
	HostNames []string
	// ClientKey names the client a request comes from, for the per-client
	// budgets of the 2026-07-28 era (spec §11.6): requests with the same key
	// share one MCP-Flow session, one offload budget, one held-bytes budget
	// and one bodies budget. Default: the remote IP address (clients behind
	// one NAT or proxy share them). With Auth the key is the verified
	// token's subject (and, with PassToken, its scopes), joined with
	// ClientKey's answer when ClientKey is set too: no holder serves two
	// subjects.
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
	// Observe, if set, receives a flow.EventHTTPRequest for each request
	// the front answers (its HTTP method, era and status; package metrics
	// counts them), on the request's goroutine once the status is written
	// (an SSE stream counts when it starts). It must not block. The
	// front's MCP-Flow sessions report theirs through Stdio.Client.Hooks.
	Observe func(flow.Event)
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
	wake          chan struct{} // closed (and replaced) when calls drops to 0
	cores         running       // the cores of ended sessions, finishing
	mu            sync.Mutex
	sessions      map[string]*httpSession
	downloads     map[string]*download    // offloaded streams by token
	finishing     map[*httpSession]bool   // ended, their cores not yet finished
	uninitialized int                     // legacy sessions before their initialize
	stateless     map[string]*httpSession // the 2026-07-28 clients' holders by ClientKey (statelessHolder)
	closing       bool
	cors          *cors.Cors
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
	if cfg.MaxBody <= 0 || cfg.MaxBody > plainio.MaxMessage {
		cfg.MaxBody = plainio.MaxMessage
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
	if cfg.Token != "" && cfg.Auth.Enabled() {
		panic("bridge: HTTPConfig: Token and Auth both set (Token is the simple case without Auth)")
	}
	if cfg.PassToken && !cfg.Auth.Enabled() {
		panic("bridge: HTTPConfig.PassToken without Auth: there is no client token to pass on")
	}
	if cfg.Auth.Enabled() && cfg.Auth.ResourceMetadataURL == "" && cfg.Resource != "" {
		cfg.Auth.ResourceMetadataURL = bearer.MetadataURL(cfg.Resource)
	}
	cfg.Auth.Scopes = slices.Clone(cfg.Auth.Scopes)
	var public *url.URL
	if cfg.PublicURL != "" {
		u, err := CheckPublicURL(cfg.PublicURL)
		if err != nil {
			panic("bridge: HTTPConfig.PublicURL: " + err.Error())
		}
		public = u
	}
	cfg.Stdio = core.WithDefaults(cfg.Stdio)
	h := &HTTPFront{cfg: cfg, log: log, held: &heldBudget{max: int64(cfg.MaxHeld)}, wake: make(chan struct{}),
		offloaded: &heldBudget{max: cfg.MaxOffload}, bodies: &heldBudget{max: int64(cfg.MaxBodiesInFlight)}, public: public,
		downloads: map[string]*download{}, sessions: map[string]*httpSession{}, finishing: map[*httpSession]bool{},
		stateless: map[string]*httpSession{}}
	h.cors = cors.New(cors.Options{
		// The one Origin policy (spec §9): an Origin the front would serve
		// is told so; any other gets no Access-Control-Allow-Origin (and
		// its actual request 403).
		AllowOriginRequestFunc: func(r *http.Request, _ string) bool { return h.originAllowed(r) },
		AllowedMethods:         []string{http.MethodGet, http.MethodPost, http.MethodDelete},
		AllowedHeaders:         corsRequestHeaders,
		ExposedHeaders:         []string{"Mcp-Session-Id", "Mcp-Protocol-Version", "WWW-Authenticate"},
		MaxAge:                 int(corsMaxAge / time.Second),
	})
	return h
}

// CORS (spec §9): a page on an allowed Origin may use the front from
// fetch (the js/ transport's Streamable HTTP fallback, spec §10.2). A
// preflight is answered before the front's other checks; bearer tokens go
// in Authorization, never in cookies, so credentials are not allowed.
var corsRequestHeaders = []string{"Content-Type", "Accept", "Authorization", "Last-Event-ID",
	"Mcp-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Mcp-Name"}

// corsMaxAge is how long a browser may keep a preflight's answer.
const corsMaxAge = 10 * time.Minute

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

// checkHeaders checks what every request must pass before the front looks
// at it: Origin, Host, the token (authenticate: the returned request
// carries what it says), the protocol version.
func (h *HTTPFront) checkHeaders(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if !h.originAllowed(r) {
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return r, false
	}
	if why := h.hostRefused(r); why != "" {
		http.Error(w, "host not allowed: "+why, http.StatusForbidden)
		return r, false
	}
	r, ok := h.authenticate(w, r)
	if !ok {
		return r, false
	}
	if v := r.Header.Get("MCP-Protocol-Version"); v != "" && !slices.Contains(core.HTTPVersions, v) && !statelessVersion(v) {
		// A 2026-07-28 client recognises this answer and does not fall
		// back (2026-07-28 transports, Backward Compatibility).
		writeJSON(w, http.StatusBadRequest, core.UnsupportedVersion(jsonrpc.NullID, v))
		return r, false
	}
	return r, true
}

// ServeHTTP implements the endpoint: CORS (a preflight is answered
// there), then the front.
func (h *HTTPFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Observe != nil {
		era := "2025"
		if statelessVersion(r.Header.Get("MCP-Protocol-Version")) {
			era = protocol.MCP20260728
		}
		sw := &statusWriter{ResponseWriter: w, observe: h.cfg.Observe, method: r.Method, era: era}
		defer sw.report(http.StatusOK) // a handler that wrote nothing answered 200
		w = sw
	}
	h.cors.ServeHTTP(w, r, h.serve)
}

// statusWriter reports a request's status to HTTPConfig.Observe once,
// when it is written (or implied by the first Write or Flush).
type statusWriter struct {
	http.ResponseWriter
	observe     func(flow.Event)
	method, era string
	reported    bool
}

func (w *statusWriter) report(code int) {
	if !w.reported {
		w.reported = true
		w.observe(flow.Event{Kind: flow.EventHTTPRequest, Server: true, Method: w.method, Outcome: w.era, Code: int64(code)})
	}
}

func (w *statusWriter) WriteHeader(code int) {
	if code >= 200 { // not an informational 1xx
		w.report(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.report(http.StatusOK)
	return w.ResponseWriter.Write(p)
}

// Flush sends what is written so far (an SSE stream's events).
func (w *statusWriter) Flush() {
	w.report(http.StatusOK)
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (h *HTTPFront) serve(w http.ResponseWriter, r *http.Request) {
	r, ok := h.checkHeaders(w, r)
	if !ok {
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
		if fs := s.core.Session(); fs != nil {
			fs.Close()
		}
	}
	h.cores.Wait()
	return nil
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
