package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge/plainio"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// The HTTP upstream: our own Streamable HTTP client (docs/design.md says
// why), one HTTP session per MCP-Flow session. This file: its config, the
// redirect policy, the connection's state, and do (one HTTP request).

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
	if cfg.MaxMessage <= 0 || cfg.MaxMessage > plainio.MaxMessage {
		cfg.MaxMessage = plainio.MaxMessage
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	warned := &sync.Map{} // tools dropped for their x-mcp-header annotations: one warning each
	dial := func(_ context.Context, recv func(jsonrpc.Message), end func(error)) (upstreamLink, error) {
		c := newHTTPConn(cfg, recv, end)
		c.warned = warned
		return c, nil
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
	// toolLists are the 2026-07-28 tools/list requests in flight, by raw
	// id, and paramHeaders the x-mcp-header annotations their answers
	// named, by tool (requestHeaders).
	toolLists    map[string]bool
	paramHeaders map[string][]mcpjson.ParamHeader
	// warned holds each tool (name and reason) dropped from a tools/list
	// answer for its x-mcp-header annotations and warned of, shared by the
	// upstream's connections (dropInvalidTools).
	warned *sync.Map
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

func newHTTPConn(cfg HTTPUpstreamConfig, recv func(jsonrpc.Message), end func(error)) *httpConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &httpConn{cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel, recv: recv, end: end,
		calls: map[string]context.CancelFunc{}, initDone: make(chan struct{}),
		toolLists: map[string]bool{}, paramHeaders: map[string][]mcpjson.ParamHeader{}}
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

func (c *httpConn) isLegacy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.postURL != ""
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
			c.learnTools(r)
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
