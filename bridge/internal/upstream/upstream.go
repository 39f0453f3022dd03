package upstream

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge/internal/running"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The upstream (spec §10): Upstream, the MCP-Flow server side's core, and
// handle, each request's way to the upstream and back. Its links are in
// process.go and pipe.go (NDJSON) and http*.go (Streamable HTTP);
// a session's connection in conn.go, its handshake in init.go; eras in
// era.go; large content in offload.go.

// Upstream serves an existing MCP server over MCP-Flow (spec §10): each
// MCP-Flow session gets its own upstream connection (a subprocess spoken to
// in NDJSON, an in-process server, an HTTP session). Requests go up with ids
// of the bridge's own; the upstream's own requests (sampling, roots,
// elicitation) reach the MCP-Flow client; progress comes back through the
// session (as datagrams when the client asked for them); $/cancel becomes
// notifications/cancelled; large content leaves the control stream on
// execution streams.
//
// Nothing it does blocks a session's goroutines (flow.Hooks): messages to the
// upstream go through a bounded queue per session that one writer drains
// (spec §10, "Backpressure").
type Upstream struct {
	dial         dialFunc
	threshold    int
	queue        int
	protocol     string        // UpstreamAuto, UpstreamModern or UpstreamLegacy
	probeTimeout time.Duration // server/discover probe (DefaultProbeTimeout)
	log          *slog.Logger

	mu    sync.Mutex
	conns map[*flow.Session]*upConn
	links running.Count // one per upstream connection until it is closed
}

// Upstream defaults (spec §8).
const (
	// DefaultUpstreamQueue is the default number of messages waiting for
	// the upstream per session.
	DefaultUpstreamQueue = 64
	// DefaultMaxUpstreamProcesses is the default cap on the stdio
	// upstream's processes running at once.
	DefaultMaxUpstreamProcesses = 64
	// DefaultStopGrace is how long an upstream process has after end of
	// input before SIGTERM, and after SIGTERM before SIGKILL.
	DefaultStopGrace = 2 * time.Second
)

func newUpstream(dial dialFunc, threshold, queue int, log *slog.Logger) *Upstream {
	if threshold <= 0 {
		threshold = 256 << 10
	}
	if queue <= 0 {
		queue = DefaultUpstreamQueue
	}
	if log == nil {
		log = slog.Default()
	}
	return &Upstream{dial: dial, threshold: threshold, queue: queue, log: log, conns: map[*flow.Session]*upConn{},
		protocol: UpstreamAuto, probeTimeout: DefaultProbeTimeout}
}

// setEra applies the era settings of a config (spec §10, "Eras").
func (u *Upstream) setEra(proto string, probe time.Duration) error {
	p, err := normProtocol(proto)
	if err != nil {
		return err
	}
	u.protocol = p
	if probe > 0 {
		u.probeTimeout = probe
	}
	return nil
}

// Configure sets the hooks of a server config that serves this upstream.
func (u *Upstream) Configure(cfg *flow.ServerConfig) {
	cfg.OnInitialize = u.initialize
	cfg.ServeStateless = true // 2026-07-28 clients too (spec §10, "Eras")
	cfg.Handler = flow.HandlerFunc(u.handle)
	onSession := cfg.OnSession
	cfg.OnSession = func(s *flow.Session) {
		// A 2025 session of a 2026-07-28 upstream hears its changes
		// through a subscription the bridge holds for it (listen.go).
		if c := u.conn(s); c != nil && !c.clientModern && c.upModern.Load() {
			c.listenForLegacy()
		}
		if onSession != nil {
			onSession(s)
		}
	}
	cfg.Hooks.Notification = func(s *flow.Session, n *jsonrpc.Request) {
		// The session's reading goroutine: queue it, never wait.
		if c := u.conn(s); c != nil {
			c.notify(n)
		}
	}
}

// Wait returns once every upstream connection opened so far has been
// closed (its process reaped), or when ctx ends. A server calls it after
// its sessions have ended, so that no upstream process outlives it.
func (u *Upstream) Wait(ctx context.Context) error {
	return u.links.Wait(ctx)
}

// handle forwards one request of the MCP-Flow client upstream.
func (u *Upstream) handle(ctx context.Context, req *flow.Request) (any, error) {
	c := u.conn(req.Session)
	// A session's first request says its era (its _meta read only then).
	if c == nil && (req.Method == protocol.MethodDiscover || mcpjson.MetaValue(req.Params, protocol.MetaProtocolVersion) != nil) || c != nil && c.clientModern {
		var err error
		if c, err = u.statelessConn(ctx, req); err != nil {
			return nil, err
		}
	}
	if c == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "no upstream for this session")
	}
	if req.Method == protocol.MethodListen && !c.upModern.Load() {
		// A 2025 upstream has no subscriptions/listen: the bridge serves
		// it, honouring what the upstream's initialize announced, and
		// passes on its list changes (conn.go, spec §11.7).
		return req.ServeListen(ctx, initCapabilities(c.initRes))
	}
	if (req.Method == methodSubscribe || req.Method == methodUnsubscribe) && !c.clientModern && c.upModern.Load() {
		// 2026-07-28 has no resources/subscribe: the bridge's
		// subscription upstream names the session's resources (listen.go).
		return c.subscribeLegacy(ctx, req)
	}
	params, answer, err := c.translate(req)
	if err != nil || answer != nil {
		return answer, err
	}
	if tok := mcpjson.ProgressToken(req.Params); tok != nil {
		c.mu.Lock()
		c.byToken[string(tok)] = req
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.byToken, string(tok))
			c.mu.Unlock()
		}()
	}
	var res json.RawMessage
	if req.Method == protocol.MethodListen {
		res, err = c.listen(ctx, req, params)
	} else {
		res, err = c.call(ctx, req.Method, params)
	}
	if err != nil {
		return nil, err
	}
	if !c.clientModern && c.upModern.Load() && isInputRequired(res) {
		return nil, errInputRequired(req.Method)
	}
	if rl, ok := c.link.(rawLink); ok {
		if res, err = rawOut(ctx, req, rl, res); err != nil {
			return nil, err
		}
	}
	return u.offload(req, res)
}
