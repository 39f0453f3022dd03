package httpfront

// This file is long because it holds the Streamable HTTP front's configuration
// (HTTPConfig's documented fields are a third of it), the checks every request
// passes, and the front's shutdown; the routes are in the other
// front_http_*.go files.

import (
	"context"
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
	"github.com/mcp-flow/mcp-flow/bridge/internal/running"
	"github.com/mcp-flow/mcp-flow/bridge/plainio"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The Streamable HTTP front (spec §10, §11.6): the handler that checks each
// request and hands it to its era (era_2025.go, era_legacy.go,
// era_stateless.go) or to a download, and the front's drain and close. Its
// config is config.go's.

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
	cores         running.Count // the cores of ended sessions, finishing
	mu            sync.Mutex
	sessions      map[string]*httpSession
	downloads     map[string]*download    // offloaded streams by token
	finishing     map[*httpSession]bool   // ended, their cores not yet finished
	uninitialized int                     // legacy sessions before their initialize
	stateless     map[string]*httpSession // the 2026-07-28 clients' holders by ClientKey (statelessHolder)
	closing       bool
	listensEnd    chan struct{} // closed by Shutdown and Close: the open subscriptions/listen end
	endListens    sync.Once
	cors          *cors.Cors
	corsParams    *cors.Cors // preflights asking for Mcp-Param-* headers (paramPreflight)
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
		stateless: map[string]*httpSession{}, listensEnd: make(chan struct{})}
	opts := cors.Options{
		// The one Origin policy (spec §9): an Origin the front would serve
		// is told so; any other gets no Access-Control-Allow-Origin (and
		// its actual request 403).
		AllowOriginRequestFunc: func(r *http.Request, _ string) bool { return h.originAllowed(r) },
		AllowedMethods:         []string{http.MethodGet, http.MethodPost, http.MethodDelete},
		AllowedHeaders:         corsRequestHeaders,
		ExposedHeaders:         []string{"Mcp-Session-Id", "Mcp-Protocol-Version", "WWW-Authenticate"},
		MaxAge:                 int(corsMaxAge / time.Second),
	}
	h.cors = cors.New(opts)
	opts.AllowedHeaders = []string{"*"} // reflects the requested headers: only for those paramPreflight checked
	h.corsParams = cors.New(opts)
	return h
}

// paramPreflight reports whether r is a CORS preflight that asks for
// Mcp-Param-{Name} headers (spec §11.6: a page's tools/call with
// x-mcp-header arguments) and nothing but them and corsRequestHeaders.
// rs/cors takes no header prefix, so such a preflight is answered by
// corsParams, which reflects the requested headers; the list checked here
// is all it reflects.
func paramPreflight(r *http.Request) bool {
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	params := false
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			switch {
			case mcpjson.IsParamHeader(name):
				params = true
			case !slices.ContainsFunc(corsRequestHeaders, func(h string) bool { return strings.EqualFold(h, name) }):
				return false
			}
		}
	}
	return params
}

// CORS (spec §9): a page on an allowed Origin may use the front from
// fetch (the js/ transport's Streamable HTTP fallback, spec §10.2). A
// preflight is answered before the front's other checks; bearer tokens go
// in Authorization, never in cookies, so credentials are not allowed.
var corsRequestHeaders = []string{"Content-Type", "Accept", "Authorization", "Last-Event-ID",
	"Mcp-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Mcp-Name"}

// corsMaxAge is how long a browser may keep a preflight's answer.
const corsMaxAge = 10 * time.Minute

// checkHeaders checks what every request must pass before the front looks
// at it: Origin, Host, the token (authenticate: the returned request
// carries what it says), the protocol version.
func (h *HTTPFront) checkHeaders(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if !h.originAllowed(r) {
		http.Error(w, originRefusal(r.Header.Get("Origin")), http.StatusForbidden)
		return r, false
	}
	if why := h.hostRefused(r); why != "" {
		http.Error(w, hostRefusal(why), http.StatusForbidden)
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
	if paramPreflight(r) {
		h.corsParams.ServeHTTP(w, r, h.serve)
		return
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
	// A subscriptions/listen never ends by itself: it ends now, with its
	// graceful result (statelessPost, spec §11.7), not with the wait.
	h.endListens.Do(func() { close(h.listensEnd) })
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
	if h.cores.Wait(ctx) != nil {
		h.Close()
		return ctx.Err()
	}
	return nil
}

// Close ends every session at once: their MCP-Flow sessions are closed,
// the requests in flight fail, the streams end. It returns once every
// session's core has finished.
func (h *HTTPFront) Close() error {
	h.mu.Lock()
	h.closing = true
	h.endListens.Do(func() { close(h.listensEnd) })
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
	return h.cores.Wait(context.Background())
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
