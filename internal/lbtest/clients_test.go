package lbtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tallyParams are the arguments of a tally call.
func tallyParams(key string) map[string]any {
	return map[string]any{"name": "tally", "arguments": map[string]string{"key": key}}
}

// flowClient is a 2026-07-28 MCP-Flow client (flow.ClientConfig
// ProtocolVersion): stateless requests on one session, dialled again
// through the load balancer when the session is shutting down or gone.
type flowClient struct {
	tr   *tracker
	kind string
	url  string
	cfg  flow.ClientConfig
	ends *flowtest.SyncBuffer // each ended session's error, a line each (nil: not kept)

	mu       sync.Mutex // held while dialling: one dial at a time
	s        *flow.Session
	sessions []*flow.Session
}

// session returns the client's session, dialling one when it has none or
// its session is draining or closed (a 2026-07-28 session holds no state of
// the client's: a new one on another server serves it as well).
func (c *flowClient) session(ctx context.Context) (*flow.Session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s != nil && c.s.State() == flow.StateReady {
		return c.s, nil
	}
	if c.s != nil && c.ends != nil {
		select {
		case <-c.s.Done():
			fmt.Fprintf(c.ends, "%v (liveness pings %d)\n", c.s.Err(), c.s.Probes())
		default: // draining: it ends later, cleanly
		}
	}
	for attempt := 0; ; attempt++ {
		s, err := flow.Dial(ctx, c.url, c.cfg)
		if err == nil {
			if c.s != nil {
				c.tr.update(func() { c.tr.kind(c.kind).reconnects++ })
			}
			c.s = s
			c.sessions = append(c.sessions, s)
			return s, nil
		}
		c.tr.update(func() { c.tr.kind(c.kind).connectFails[dialClass(err)]++ })
		if ctx.Err() != nil {
			return nil, err
		}
		pause(ctx, backoff(attempt))
	}
}

// dialClass names a failed dial's class, for the counts.
func dialClass(err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "503"):
		return "503 (server draining)"
	case strings.Contains(s, "timeout"):
		return "handshake timeout"
	case strings.Contains(s, "refused"):
		return "refused"
	}
	return s
}

func (c *flowClient) call(ctx context.Context, key string) (string, verdict, string, error) {
	s, err := c.session(ctx)
	if err != nil {
		return "", didNotRun, "no session", err
	}
	r, err := s.Call(ctx, "tools/call", tallyParams(key))
	switch {
	case errors.Is(err, flow.ErrShuttingDown):
		// Refused before sending (the session drains), or answered -32006
		// by the server (the request crossed its $/shutdown) or failed so
		// at its FIN: none of them ran (spec §7.2).
		return "", didNotRun, "-32006 shutting down", err
	case err != nil:
		return "", mayHaveRun, "session error", err
	}
	var res struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) != 1 || res.IsError {
		return "", mayHaveRun, "bad result", fmt.Errorf("result %s: %v", r.Result, err)
	}
	return res.Content[0].Text, didNotRun, "", nil
}

// close closes every session the client opened.
func (c *flowClient) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sessions {
		s.Close()
	}
	return nil
}

// newFlowClient is a 2026-07-28 flow client of url.
func newFlowClient(tr *tracker, kind, url string, cfg flow.ClientConfig) *flowClient {
	cfg.ProtocolVersion = protocol.MCP20260728
	return &flowClient{tr: tr, kind: kind, url: url, cfg: cfg}
}

// sdkClient is a client of the official Go SDK (go-sdk) over some
// transport: its callers share one session, opened again when the
// transport says it is gone (a 404 for its id).
type sdkClient struct {
	tr      *tracker
	kind    string
	connect func(ctx context.Context) (*mcp.ClientSession, error)

	mu       sync.Mutex // held while connecting: one at a time
	cs       *mcp.ClientSession
	opened   bool
	sessions []*mcp.ClientSession

	pmu     sync.Mutex
	pending map[*mcp.ClientSession]map[*pendingCall]bool // calls in flight, by session
}

// pendingCall is one call in flight on a session; shared records that
// another call of the session was in flight at some moment of its life.
type pendingCall struct{ shared bool }

// begin records a call in flight on cs.
func (c *sdkClient) begin(cs *mcp.ClientSession) *pendingCall {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.pending == nil {
		c.pending = map[*mcp.ClientSession]map[*pendingCall]bool{}
	}
	m := c.pending[cs]
	if m == nil {
		m = map[*pendingCall]bool{}
		c.pending[cs] = m
	}
	p := &pendingCall{}
	m[p] = true
	if len(m) > 1 {
		for q := range m {
			q.shared = true
		}
	}
	return p
}

// end ends p and reports whether it shared its session with another call.
func (c *sdkClient) end(cs *mcp.ClientSession, p *pendingCall) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	delete(c.pending[cs], p)
	return p.shared
}

func (c *sdkClient) session(ctx context.Context) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		return c.cs, nil
	}
	for attempt := 0; ; attempt++ {
		t0 := time.Now()
		cs, err := c.connect(ctx)
		if err != nil {
			c.tr.update(func() {
				k := c.tr.kind(c.kind)
				k.connectErrs = appendFew(k.connectErrs, fmt.Sprintf("after %v: %v", time.Since(t0).Round(time.Millisecond), err))
			})
		}
		if err == nil {
			if c.opened {
				c.tr.update(func() { c.tr.kind(c.kind).reconnects++ })
			}
			c.cs, c.opened = cs, true
			c.sessions = append(c.sessions, cs)
			return cs, nil
		}
		c.tr.update(func() { c.tr.kind(c.kind).connectFails[sdkClass(err)]++ })
		if ctx.Err() != nil {
			return nil, err
		}
		pause(ctx, backoff(attempt))
	}
}

// drop forgets cs, so that the next call opens a new session.
func (c *sdkClient) drop(cs *mcp.ClientSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs == cs {
		c.cs = nil
	}
}

func (c *sdkClient) call(ctx context.Context, key string) (string, verdict, string, error) {
	cs, err := c.session(ctx)
	if err != nil {
		return "", didNotRun, "no session", err
	}
	p := c.begin(cs)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tally", Arguments: map[string]string{"key": key}})
	shared := c.end(cs, p)
	if err != nil {
		v, reopen, why := judgeSDK(err)
		if reopen {
			c.drop(cs)
		}
		if errors.Is(err, mcp.ErrSessionMissing) && shared {
			// The go-sdk fails the whole connection on a 404 and hands
			// that error to every call pending on it, including calls
			// whose requests were accepted and run, their answers still
			// on their way: the error is this call's own 404 only when no
			// other call was in flight beside it.
			v, why = mayHaveRun, "404 session gone, with other calls in flight"
		}
		return "", v, why, err
	}
	if res.IsError || len(res.Content) != 1 {
		return "", mayHaveRun, "tool error", fmt.Errorf("result: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return "", mayHaveRun, "bad result", fmt.Errorf("content %T", res.Content[0])
	}
	return tc.Text, didNotRun, "", nil
}

// close closes every session the client opened; the error is the current
// session's (for the stdio front, the bridge's exit).
func (c *sdkClient) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	for _, cs := range c.sessions {
		if e := cs.Close(); cs == c.cs {
			err = e
		}
	}
	return err
}

// judgeSDK reads a go-sdk call's error: what it says of the request, and
// whether the session is gone.
func judgeSDK(err error) (v verdict, reopen bool, why string) {
	if strings.Contains(err.Error(), "Service Unavailable") {
		// 503: the front refuses new requests while it shuts down (before
		// reading the body). The go-sdk wraps it in its own -32005
		// ("rejected by transport"), so this comes first.
		return didNotRun, false, "503 refused"
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		switch {
		case we.Code == -32006:
			return didNotRun, false, "-32006 shutting down"
		case we.Code == jsonrpc.CodeInternalError && lostBeforeSending(we):
			return didNotRun, false, "-32603 server lost before the request left"
		}
		return mayHaveRun, false, fmt.Sprintf("JSON-RPC %d", we.Code)
	}
	if errors.Is(err, mcp.ErrSessionMissing) {
		// 404 for the session's id: looked up before the body is read
		// (spec §10, "The HTTP front's limits"), so the request did not
		// run, when the 404 is this call's own (see sdkClient.call).
		return didNotRun, true, "404 session gone"
	}
	if errors.Is(err, mcp.ErrConnectionClosed) {
		// The go-sdk's jsonrpc2 refuses a call on a connection already
		// broken or closing before writing it ("client is closing" when
		// the call is made, "server is closing" when it is written); a
		// call in flight when the connection breaks gets the transport's
		// error instead, and may have run.
		if s := err.Error(); strings.Contains(s, "client is closing") || strings.Contains(s, "server is closing") {
			return didNotRun, true, "connection already closed"
		}
		return mayHaveRun, true, sdkClass(err)
	}
	return mayHaveRun, false, sdkClass(err)
}

// lostBeforeSending reports whether a front's -32603 "MCP-Flow server …
// lost" (bridge.ServerLostError, spec §10) is for a request that never
// left: no new session within the reconnection wait, or a stateless dial
// that failed. One lost in flight may have run.
func lostBeforeSending(we *jsonrpc.Error) bool {
	if !strings.Contains(we.Message, "MCP-Flow server ") || !strings.Contains(we.Message, " lost") {
		return false
	}
	var data struct{ Reason string }
	_ = json.Unmarshal(we.Data, &data)
	return strings.Contains(we.Message, "(no new session within ") || strings.HasPrefix(data.Reason, "flow: dial ")
}

// sdkClass names a go-sdk error's class, for the counts.
func sdkClass(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
