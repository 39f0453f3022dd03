package bridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// HTTPUpstreamConfig configures an upstream that is a Streamable HTTP MCP
// server (transports spec 2025-11-25, "Streamable HTTP"). The bridge is that
// server's MCP client: one HTTP session per MCP-Flow session.
type HTTPUpstreamConfig struct {
	// Endpoint is the server's MCP endpoint (http:// or https://).
	Endpoint string
	// HTTPClient sends the requests. Default: a client without an overall
	// timeout (SSE streams live as long as their request).
	HTTPClient *http.Client
	// Header is sent with every request (a static Authorization, say). Its
	// fields are credentials: a redirect to another origin drops them
	// (redirectPolicy).
	Header http.Header
	// OAuth, when set, authorizes the bridge itself against the upstream
	// (the go-sdk's auth package: authorization code flow, dynamic or
	// pre-registered clients). Tokens are the bridge's own: an MCP-Flow
	// client's credentials are never passed through.
	OAuth auth.OAuthHandler
	// MaxRetries bounds the reconnections of one SSE stream that bring no
	// new event (default 5).
	MaxRetries int
	// MaxMessage bounds one message (a JSON body, an SSE event) read from
	// the upstream (default and ceiling: MaxMessage, 64 MiB). A larger one
	// fails the request it belongs to.
	MaxMessage int
	// Threshold: content larger than this many bytes goes on execution
	// streams (0: 256 KiB).
	Threshold int
	// Queue bounds the messages waiting for the upstream per session
	// (default DefaultUpstreamQueue; spec §10, "Backpressure").
	Queue int
	// Protocol and ProbeTimeout: as StdioUpstreamConfig's (spec §10, "Eras").
	Protocol     string
	ProbeTimeout time.Duration
	Logger       *slog.Logger
}

// NewHTTPUpstream returns an upstream that reaches, per MCP-Flow session, the
// Streamable HTTP MCP server of cfg.
func NewHTTPUpstream(cfg HTTPUpstreamConfig) *Upstream {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	client := *cfg.HTTPClient // the caller's client stays as it was
	client.CheckRedirect = redirectPolicy(cfg.Header, cfg.HTTPClient.CheckRedirect)
	cfg.HTTPClient = &client
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = 5
	}
	if cfg.MaxMessage <= 0 || cfg.MaxMessage > MaxMessage {
		cfg.MaxMessage = MaxMessage
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	dial := func(_ context.Context, recv func(jsonrpc.Message), end func(error)) (upstreamLink, error) {
		return newHTTPConn(cfg, recv, end), nil
	}
	u := newUpstream(dial, cfg.Threshold, cfg.Queue, cfg.Logger)
	if err := u.setEra(cfg.Protocol, cfg.ProbeTimeout); err != nil {
		panic(err)
	}
	return u
}

// maxRedirects is how many redirects one upstream request may follow, as
// net/http's default policy allows.
const maxRedirects = 10

// redirectPolicy is the upstream client's CheckRedirect. net/http keeps
// Authorization on a redirect to the same host name whatever its scheme or
// port (an https endpoint redirecting to http:// on the same host, or to
// another port of it, would get the bearer token in clear or at another
// service). A redirect whose scheme, host or port differs from the original
// request's therefore loses every credential the bridge sets: Authorization
// (the configured token or the OAuth one), Cookie, Proxy-Authorization and
// the fields of the configured header. A same-origin redirect keeps them.
// The caller's own policy (then), when set, is asked afterwards; without
// one, at most maxRedirects are followed.
func redirectPolicy(configured http.Header, then func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && !sameOrigin(via[0].URL, req.URL) {
			for _, k := range []string{"Authorization", "Cookie", "Proxy-Authorization"} {
				req.Header.Del(k)
			}
			for k := range configured {
				req.Header.Del(k)
			}
		}
		if then != nil {
			return then(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
}

// sameOrigin reports whether a and b have the same scheme, host and port
// (a missing port is the scheme's default).
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		switch strings.ToLower(u.Scheme) {
		case "https":
			return "443"
		case "http":
			return "80"
		}
		return ""
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// httpConn is one Streamable HTTP client session: the upstream link of one
// MCP-Flow session.
type httpConn struct {
	cfg    HTTPUpstreamConfig
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	recv   func(jsonrpc.Message) // the server's messages go here
	end    func(error)           // called when the server ends the session
	wg     sync.WaitGroup

	mu        sync.Mutex
	sessionID string
	version   string // negotiated protocol version, once known
	initID    jsonrpc.ID
	expired   bool                          // the server answered 404: the session is gone
	calls     map[string]context.CancelFunc // requests in flight, by raw id
	postURL   string                        // legacy HTTP+SSE: where messages are POSTed
	initDone  chan struct{}                 // closed when the initialize response is in
	initOnce  sync.Once
	// modern: the server speaks 2026-07-28 (spec §10, "Eras"): every
	// request carries the routing headers, there is no session and no GET
	// stream, and a request is cancelled by closing its response stream.
	modern bool
}

// setModern switches the connection between the eras (modernLink).
func (c *httpConn) setModern(v bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.modern = v
	c.sessionID, c.version = "", ""
	if v {
		c.version = protocol.MCP20260728
	}
}

func (c *httpConn) isModern() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.modern
}

// routingHeaders are a 2026-07-28 request's Mcp-Method and Mcp-Name
// (transports 2026-07-28, "Standard Request Headers"); a name that is not
// plain visible ASCII goes in the Base64 sentinel form.
func routingHeaders(r *jsonrpc.Request) http.Header {
	h := http.Header{"Mcp-Method": {r.Method}}
	var p struct {
		Name *string `json:"name"`
		URI  *string `json:"uri"`
	}
	switch r.Method {
	case "tools/call", "prompts/get", "resources/read":
		if json.Unmarshal(r.Params, &p) != nil {
			return h
		}
		v := p.Name
		if r.Method == "resources/read" {
			v = p.URI
		}
		if v != nil {
			h.Set("Mcp-Name", headerValue(*v))
		}
	}
	return h
}

// headerValue is v as an HTTP header value: as it is when it is visible
// ASCII (inner spaces allowed), else =?base64?…?= (transports 2026-07-28,
// "Value Encoding").
func headerValue(v string) string {
	plain := v != "" && v[0] != ' ' && v[len(v)-1] != ' '
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] == ' ' || (v[i] >= 0x21 && v[i] <= 0x7e)
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// sendModern sends one message to a 2026-07-28 server: a request as its own
// POST with the routing headers; notifications/cancelled closes the
// cancelled request's response stream instead of being sent (that is the
// cancellation on Streamable HTTP); other notifications and responses have
// no place in this revision and are dropped.
func (c *httpConn) sendModern(m jsonrpc.Message) error {
	r, ok := m.(*jsonrpc.Request)
	if !ok || !r.IsCall() {
		if ok && r.Method == protocol.MethodCancelled {
			var p struct {
				RequestID jsonrpc.ID `json:"requestId"`
			}
			if json.Unmarshal(r.Params, &p) == nil {
				c.mu.Lock()
				stop := c.calls[p.RequestID.Raw()]
				c.mu.Unlock()
				if stop != nil {
					stop()
				}
			}
		}
		return nil
	}
	body := jsonrpc.AppendJSON(nil, m)
	ctx, cancel := context.WithCancel(c.ctx)
	c.mu.Lock()
	c.calls[r.ID.Raw()] = cancel
	c.mu.Unlock()
	left := make(chan struct{})
	var once sync.Once
	markLeft := func() { once.Do(func() { close(left) }) }
	trace := &httptrace.ClientTrace{WroteHeaders: markLeft}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.calls, r.ID.Raw())
			c.mu.Unlock()
			cancel()
		}()
		resp, err := c.do(httptrace.WithClientTrace(ctx, trace), http.MethodPost, body, routingHeaders(r))
		markLeft()
		if err != nil {
			if ctx.Err() == nil {
				c.failCall(r.ID, fmt.Sprintf("upstream %s: %v", c.cfg.Endpoint, err))
			}
			return
		}
		c.answer(ctx, resp, r.ID)
	}()
	<-left
	return nil
}

func newHTTPConn(cfg HTTPUpstreamConfig, recv func(jsonrpc.Message), end func(error)) *httpConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &httpConn{cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel, recv: recv, end: end,
		calls: map[string]context.CancelFunc{}, initDone: make(chan struct{})}
}

// send POSTs one message. It returns once the POST has left, so that
// messages reach the server in the bridge's order without one slow POST
// holding the next (spec §10): a notification once it is written whole
// (notifications/initialized must be in before the requests that follow), a
// request or response once its headers are written (the server handles
// requests concurrently anyway; a server that does not read a large body
// holds that POST only). initialize returns once its answer (with the
// session id) is in and the standalone stream is open. Answers are read in
// the background.
func (c *httpConn) send(m jsonrpc.Message) error {
	if c.isModern() {
		return c.sendModern(m)
	}
	body := jsonrpc.AppendJSON(nil, m)
	var call jsonrpc.ID
	initialize, notification := false, false
	var cancelled jsonrpc.ID // the request a notifications/cancelled is about
	if r, ok := m.(*jsonrpc.Request); ok {
		call = r.ID
		notification = !r.IsCall()
		initialize = r.Method == protocol.MethodInitialize
		if initialize {
			c.mu.Lock()
			c.initID = r.ID
			c.mu.Unlock()
		}
		if r.Method == protocol.MethodCancelled {
			var p struct {
				RequestID jsonrpc.ID `json:"requestId"`
			}
			if json.Unmarshal(r.Params, &p) == nil {
				cancelled = p.RequestID
			}
		}
	}
	// A request's POST and its stream end when the bridge cancels it.
	ctx, cancel := context.WithCancel(c.ctx)
	if call.IsValid() {
		c.mu.Lock()
		c.calls[call.Raw()] = cancel
		c.mu.Unlock()
	}
	left := make(chan struct{})
	var once sync.Once
	markLeft := func() { once.Do(func() { close(left) }) }
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		markLeft()
		if cancelled.IsValid() {
			// The notification is on the wire; the cancelled request's
			// POST and SSE stream are of no more use (MCP sends no
			// response to it).
			c.mu.Lock()
			stop := c.calls[cancelled.Raw()]
			c.mu.Unlock()
			if stop != nil {
				stop()
			}
		}
	}}
	if !notification {
		trace.WroteHeaders = markLeft
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.calls, call.Raw())
			c.mu.Unlock()
			cancel()
		}()
		resp, err := c.do(httptrace.WithClientTrace(ctx, trace), http.MethodPost, body, nil)
		markLeft()
		if err != nil {
			if ctx.Err() == nil {
				c.failCall(call, fmt.Sprintf("upstream %s: %v", c.cfg.Endpoint, err))
			}
			return
		}
		if initialize && !c.isLegacy() && (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed) {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if e := modernError(b); e != nil {
				// A 2026-07-28 server refusing the 2025 handshake
				// (transports 2026-07-28, "Backward Compatibility"): no
				// HTTP+SSE fallback; the bridge may probe it instead.
				c.recv(jsonrpc.NewErrorResponse(call, e))
				return
			}
			if err := c.legacy(body, resp.Status); err != nil {
				c.failCall(call, err.Error())
			}
			return
		}
		c.answer(ctx, resp, call)
	}()
	<-left
	if initialize {
		// The session id comes with the initialize response; nothing else
		// may be sent before it is known. Then the standalone stream opens
		// before anything else is sent (as the go-sdk's client does), so
		// that no server request sent on it is lost to a race.
		c.wg.Wait()
		c.mu.Lock()
		ok := c.version != "" && c.postURL == "" && !c.modern // a refused initialize may be followed by a probe at once
		c.mu.Unlock()
		if ok {
			c.listen()
		}
	}
	return nil
}

// do sends one HTTP request with the session's headers, authorizing and
// retrying once on 401/403 when OAuth is configured.
func (c *httpConn) do(ctx context.Context, method string, body []byte, extra http.Header) (*http.Response, error) {
	build := func() (*http.Request, error) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		target := c.cfg.Endpoint
		c.mu.Lock()
		legacy := c.postURL != ""
		if legacy && method == http.MethodPost {
			target = c.postURL
		}
		c.mu.Unlock()
		req, err := http.NewRequestWithContext(ctx, method, target, rd)
		if err != nil {
			return nil, err
		}
		for k, v := range c.cfg.Header {
			req.Header[k] = v
		}
		for k, v := range extra {
			req.Header[k] = v
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		c.mu.Lock()
		if c.sessionID != "" {
			req.Header.Set("Mcp-Session-Id", c.sessionID)
		}
		if c.version != "" && !legacy {
			req.Header.Set("Mcp-Protocol-Version", c.version)
		}
		c.mu.Unlock()
		if c.cfg.OAuth != nil {
			ts, err := c.cfg.OAuth.TokenSource(ctx)
			if err != nil {
				return nil, err
			}
			if ts != nil {
				if tok, err := ts.Token(); err == nil && tok != nil {
					req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
				}
			}
		}
		return req, nil
	}
	req, err := build()
	if err != nil {
		return nil, err
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	if c.cfg.OAuth != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		if err := c.cfg.OAuth.Authorize(ctx, req, resp); err != nil {
			return nil, fmt.Errorf("authorization: %w", err)
		}
		if req, err = build(); err != nil {
			return nil, err
		}
		return c.cfg.HTTPClient.Do(req)
	}
	return resp, nil
}

// answer reads the server's answer to a POST: 202 for notifications and
// responses, a JSON body or an SSE stream for requests.
func (c *httpConn) answer(ctx context.Context, resp *http.Response, call jsonrpc.ID) {
	defer resp.Body.Close()
	if c.isLegacy() { // answers come on the SSE stream; a POST only says accepted or not
		if resp.StatusCode/100 != 2 {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			c.failCall(call, fmt.Sprintf("upstream (HTTP+SSE) answered HTTP %s: %s", resp.Status, strings.TrimSpace(string(b))))
		}
		return
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.mu.Lock()
		if c.sessionID == "" {
			c.sessionID = sid
		}
		c.mu.Unlock()
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && c.session() != "":
		c.mu.Lock()
		c.expired = true
		c.mu.Unlock()
		c.failCall(call, "upstream session expired (HTTP 404)")
		c.log.Warn("upstream session expired", "endpoint", c.cfg.Endpoint)
		c.end(errors.New("upstream session expired (HTTP 404)"))
		return
	case resp.StatusCode/100 != 2:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if p, err := codec.Default(codec.JSON).Decode(b); err == nil {
			if msgs, _ := jsonrpc.Validate(p); len(msgs) == 1 {
				if r, ok := msgs[0].(*jsonrpc.Response); ok && r.Error != nil && call.IsValid() {
					r.ID = call
					c.recv(r)
					return
				}
			}
		}
		c.failCall(call, fmt.Sprintf("upstream answered HTTP %s: %s", resp.Status, strings.TrimSpace(string(b))))
		return
	case !call.IsValid():
		return // 202 for a notification or a response
	}
	switch mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); strings.TrimSpace(strings.ToLower(mt)) {
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.cfg.MaxMessage)+1))
		switch {
		case err != nil:
			c.failCall(call, fmt.Sprintf("upstream JSON answer unreadable: %v", err))
			return
		case len(b) > c.cfg.MaxMessage:
			c.failCall(call, fmt.Sprintf("upstream JSON answer over the %d-byte message limit", c.cfg.MaxMessage))
			return
		}
		if !c.deliverRaw(b, call) {
			c.failCall(call, "upstream answered without a response to the request")
		}
	case "text/event-stream":
		c.stream(ctx, resp, call)
	default:
		c.failCall(call, fmt.Sprintf("upstream answered %q, neither JSON nor SSE", resp.Header.Get("Content-Type")))
	}
}

func (c *httpConn) isLegacy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.postURL != ""
}

// legacyWait bounds how long the legacy transport's endpoint event and
// initialize answer may take.
const legacyWait = 30 * time.Second

// legacy falls back to the HTTP+SSE transport of MCP 2024-11-05, as the
// 2025-11-25 transports spec tells a client to when its initialize POST
// gets 400, 404 or 405 ("Backwards Compatibility"): GET the endpoint for an
// SSE stream whose first event, "endpoint", names the URL to POST messages
// to; every server message then comes on that one stream. It returns once
// the initialize response is in.
func (c *httpConn) legacy(initBody []byte, postStatus string) error {
	resp, err := c.do(c.ctx, http.MethodGet, nil, http.Header{"Accept": {"text/event-stream"}})
	if err != nil {
		return fmt.Errorf("upstream %s: POST answered %s, and the HTTP+SSE GET failed: %v", c.cfg.Endpoint, postStatus, err)
	}
	if resp.StatusCode != http.StatusOK || !isEventStream(resp) {
		resp.Body.Close()
		return fmt.Errorf("upstream %s speaks neither Streamable HTTP (POST answered %s) nor HTTP+SSE (GET answered %s)", c.cfg.Endpoint, postStatus, resp.Status)
	}
	stop := time.AfterFunc(legacyWait, func() { resp.Body.Close() })
	rd := newSSEReader(resp.Body, c.cfg.MaxMessage)
	ev, err := rd.next()
	stop.Stop()
	if err != nil || ev.typ != "endpoint" {
		resp.Body.Close()
		return fmt.Errorf("upstream HTTP+SSE stream: want an endpoint event first, got %q (%v)", ev.typ, err)
	}
	base, _ := url.Parse(c.cfg.Endpoint)
	post, err := base.Parse(strings.TrimSpace(string(ev.data)))
	if err != nil || (post.Scheme != "http" && post.Scheme != "https") || post.Host != base.Host {
		resp.Body.Close()
		return fmt.Errorf("upstream HTTP+SSE endpoint %q is not on %s", ev.data, base.Host)
	}
	c.mu.Lock()
	c.postURL = post.String()
	c.mu.Unlock()
	c.log.Info("upstream speaks the 2024-11-05 HTTP+SSE transport", "post", c.postURL)
	go func() { // the one stream of every server message, for the session's life
		defer resp.Body.Close()
		for {
			ev, err := rd.next()
			if err != nil {
				if c.ctx.Err() == nil {
					c.end(fmt.Errorf("upstream HTTP+SSE stream ended: %w", err))
				}
				return
			}
			if ev.typ == "" || ev.typ == "message" {
				c.deliverRaw(ev.data, jsonrpc.ID{})
			}
		}
	}()
	pr, err := c.do(c.ctx, http.MethodPost, initBody, nil)
	if err != nil {
		return fmt.Errorf("upstream HTTP+SSE initialize: %v", err)
	}
	pr.Body.Close()
	if pr.StatusCode/100 != 2 {
		return fmt.Errorf("upstream HTTP+SSE initialize: HTTP %s", pr.Status)
	}
	select {
	case <-c.initDone:
		return nil
	case <-time.After(legacyWait):
		return fmt.Errorf("upstream HTTP+SSE: no initialize answer within %v", legacyWait)
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
}

// listenWait bounds how long listen waits for the GET stream's headers.
const listenWait = 2 * time.Second

// listen opens the standalone GET stream (2025-11-25 §Listening for
// Messages from the Server; a 405 means the server offers none) and returns
// once its response headers are in, or after listenWait.
func (c *httpConn) listen() {
	open := make(chan struct{})
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		resp, err := c.do(c.ctx, http.MethodGet, nil, http.Header{"Accept": {"text/event-stream"}})
		close(open)
		if err != nil {
			c.log.Debug("upstream GET stream", "err", err)
			return
		}
		if resp.StatusCode != http.StatusOK || !isEventStream(resp) {
			resp.Body.Close()
			return
		}
		c.stream(c.ctx, resp, jsonrpc.ID{})
	}()
	select {
	case <-open:
	case <-time.After(listenWait):
		c.log.Debug("upstream GET stream: no headers yet; going on", "after", listenWait)
	}
}

func isEventStream(resp *http.Response) bool {
	mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// stream reads an SSE stream until the response to call arrives (for a
// POST's stream) or the session ends (the standalone stream). A stream cut
// early is resumed with GET and Last-Event-ID after the server's retry delay
// (2025-11-25 §Resumability and Redelivery).
func (c *httpConn) stream(ctx context.Context, resp *http.Response, call jsonrpc.ID) {
	var lastID string
	var retry time.Duration
	fruitless := 0
	for {
		got, last, r, err := c.events(ctx, resp.Body, call)
		resp.Body.Close()
		if got || ctx.Err() != nil {
			return
		}
		if err != nil {
			c.failCall(call, err.Error())
			return
		}
		if c.isModern() {
			c.failCall(call, "upstream SSE stream ended without a response (2026-07-28 streams are not resumed)")
			return
		}
		if r > 0 {
			retry = r
		}
		if last != "" && last != lastID {
			lastID, fruitless = last, 0
		} else {
			fruitless++
		}
		if lastID == "" && call.IsValid() {
			c.failCall(call, "upstream SSE stream ended without a response and cannot be resumed (no event id)")
			return
		}
		if fruitless > c.cfg.MaxRetries {
			c.failCall(call, fmt.Sprintf("upstream SSE stream: %d reconnections without a new event", c.cfg.MaxRetries))
			return
		}
		delay := retry
		if delay <= 0 {
			delay = time.Duration(1<<min(fruitless, 5)) * 100 * time.Millisecond
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return
		}
		h := http.Header{"Accept": {"text/event-stream"}}
		if lastID != "" {
			h.Set("Last-Event-Id", lastID)
		}
		next, err := c.do(ctx, http.MethodGet, nil, h)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Debug("upstream SSE reconnect", "err", err)
			fruitless++
			resp = &http.Response{Body: http.NoBody}
			continue
		}
		if next.StatusCode == http.StatusMethodNotAllowed || next.StatusCode == http.StatusNotFound {
			next.Body.Close()
			c.failCall(call, fmt.Sprintf("upstream refused to resume the SSE stream: HTTP %s", next.Status))
			return
		}
		if next.StatusCode != http.StatusOK || !isEventStream(next) {
			next.Body.Close()
			resp = &http.Response{Body: http.NoBody}
			continue
		}
		resp = next
	}
}

// events reads SSE events and delivers their messages; it reports whether
// the response to call came, the last event id and the last retry delay
// seen, and an error that rules out resuming the stream (an event over the
// message limit).
func (c *httpConn) events(ctx context.Context, body io.Reader, call jsonrpc.ID) (got bool, lastID string, retry time.Duration, fatal error) {
	rd := newSSEReader(body, c.cfg.MaxMessage)
	for {
		ev, err := rd.next()
		switch {
		case errors.Is(err, errLineTooLong):
			return false, rd.lastID, rd.retry, fmt.Errorf("upstream SSE event over the %d-byte message limit", c.cfg.MaxMessage)
		case err != nil:
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				c.log.Debug("upstream SSE stream", "err", err)
			}
			return false, rd.lastID, rd.retry, nil
		}
		if ev.typ == "" || ev.typ == "message" {
			if c.deliverRaw(ev.data, call) {
				return true, rd.lastID, rd.retry, nil
			}
		}
	}
}

// deliverRaw passes the messages of one JSON text to the bridge and reports
// whether the response to call was among them.
func (c *httpConn) deliverRaw(b []byte, call jsonrpc.ID) bool {
	p, err := codec.Default(codec.JSON).Decode(bytes.Clone(b))
	if err != nil {
		c.log.Warn("upstream sent unreadable JSON", "err", err)
		return false
	}
	msgs, _ := jsonrpc.Validate(p)
	got := false
	for _, m := range msgs {
		if r, ok := m.(*jsonrpc.Response); ok {
			got = got || (call.IsValid() && r.ID == call)
			c.noteInitialize(r)
		}
		c.recv(m)
	}
	return got
}

// noteInitialize learns the negotiated protocol version, which every later
// request carries in MCP-Protocol-Version.
func (c *httpConn) noteInitialize(r *jsonrpc.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.initID.IsValid() || r.ID != c.initID || r.Result == nil {
		return
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(r.Result, &res) == nil {
		c.version = res.ProtocolVersion
	}
	c.initOnce.Do(func() { close(c.initDone) })
}

// failCall answers a request the upstream cannot answer with an internal
// error that says why.
func (c *httpConn) failCall(call jsonrpc.ID, msg string) {
	c.log.Debug("upstream request failed", "id", call.String(), "why", msg)
	if call.IsValid() {
		c.recv(jsonrpc.NewErrorResponse(call, jsonrpc.NewError(jsonrpc.CodeInternalError, msg)))
	}
}

func (c *httpConn) session() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// close ends the HTTP session: DELETE (2025-11-25 §Session Management)
// unless the server has ended it, then every request and stream of it.
func (c *httpConn) close() {
	c.mu.Lock()
	live := c.sessionID != "" && !c.expired
	c.mu.Unlock()
	if live { // an expired session has nothing to delete
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if resp, err := c.do(ctx, http.MethodDelete, nil, nil); err == nil {
			resp.Body.Close()
		}
		cancel()
	}
	c.cancel()
	c.wg.Wait()
}

// modernError returns the JSON-RPC error of a body that is a 2026-07-28
// server's refusal (UnsupportedProtocolVersionError, -32022), else nil.
func modernError(body []byte) *jsonrpc.Error {
	var r struct {
		Error *jsonrpc.Error `json:"error"`
	}
	if json.Unmarshal(body, &r) != nil || r.Error == nil || r.Error.Code != protocol.CodeUnsupportedProtocolVersion {
		return nil
	}
	return r.Error
}
