package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge/plainio"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// One session's upstream connection (upConn): its link, the bounded queue
// and its one writer (spec §10, "Backpressure"), calls and their
// cancellation, and what the upstream sends (responses, its own requests,
// notifications).

// upstreamLink is one session's connection to its upstream MCP server,
// message by message: a subprocess's pipes, an in-process server, an HTTP
// session.
type upstreamLink interface {
	// send passes one message on. One goroutine (the session's writer)
	// calls it, in the order of the queue; it may block while the upstream
	// does not take the message, and close unblocks it.
	send(jsonrpc.Message) error
	// close ends the connection and waits until it has ended.
	close()
}

// dialFunc connects one session's upstream. The link hands every message
// from the upstream to recv (possibly from several goroutines), and calls
// end when the upstream's side is over.
type dialFunc func(ctx context.Context, recv func(jsonrpc.Message), end func(error)) (upstreamLink, error)

type upConn struct {
	u       *Upstream
	s       *flow.Session
	link    upstreamLink
	out     chan *outMsg  // the queue to the upstream (spec §10)
	quit    chan struct{} // closed when the session is over: the writer stops
	wdone   chan struct{} // closed when the writer has returned
	nextID  atomic.Int64
	mu      sync.Mutex
	pending plainio.Waiters
	byToken map[string]*flow.Request // progress tokens of requests in flight
	subs    map[string]jsonrpc.ID    // a 2026 upstream's subscriptions: our id upstream -> the client's
	ended   chan struct{}            // closed when the upstream's side ends
	endOnce sync.Once
	endErr  error
	dropped atomic.Int64 // client notifications dropped since the queue was last open

	// Eras (spec §10, "Eras"). clientModern: the MCP-Flow session speaks
	// 2026-07-28; upModern: the upstream does. initRes is a 2025
	// upstream's initialize result (it answers a 2026 client's
	// server/discover); clientCaps and clientInfo are a 2025 client's,
	// added to the _meta of each request to a 2026 upstream. All are set
	// before the session's first request reaches handle.
	clientModern bool
	upModern     atomic.Bool
	initRes      json.RawMessage
	clientCaps   json.RawMessage
	clientInfo   json.RawMessage
	upCaps       json.RawMessage     // a 2026 upstream's, for a 2025 session (listen.go)
	legacy       *legacyListen       // the subscription held for a 2025 session (listen.go)
	legacyURIs   map[string]struct{} // the resources that session subscribed to (listen.go)
	relistenMu   sync.Mutex          // one relisten at a time
	ready        chan struct{}       // a 2026 session's: closed once open has run
	openErr      error
}

// outMsg is one message in the queue. Its state says whether the writer has
// taken it, so that a request cancelled while it waits is never sent (and
// needs no notifications/cancelled).
type outMsg struct {
	m     jsonrpc.Message
	state atomic.Int32
}

const (
	outQueued int32 = iota
	outTaken
	outDropped
)

func (u *Upstream) conn(s *flow.Session) *upConn {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.conns[s]
}

var errUpstreamClosed = errors.New("upstream connection closed")

// send queues m for the upstream. While the queue is full it waits
// (backpressure on the caller: a handler's goroutine, never the session's),
// until ctx ends or the upstream or session is over.
func (c *upConn) send(ctx context.Context, m jsonrpc.Message) (*outMsg, error) {
	om := &outMsg{m: m}
	select {
	case c.out <- om:
		return om, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-c.ended:
		return nil, c.endedError()
	case <-c.quit:
		return nil, errUpstreamClosed
	}
}

// trySend queues m unless the queue is full; for the session's own
// goroutines, which must not block (flow.Hooks).
func (c *upConn) trySend(m jsonrpc.Message) bool {
	select {
	case c.out <- &outMsg{m: m}:
		return true
	default:
		return false
	}
}

// notify queues a notification of the client's. The session's goroutine
// calls it, which must not wait: when the queue is full (the upstream is not
// taking messages) the notification is dropped, and the drops are logged
// once per run of them (spec §10, "Backpressure").
func (c *upConn) notify(n *jsonrpc.Request) {
	if c.upModern.Load() && n.Method != protocol.MethodCancelled {
		return // 2026-07-28 has no other client notification (spec §10, "Eras")
	}
	if c.trySend(n) {
		if d := c.dropped.Swap(0); d > 0 {
			c.u.log.Warn("upstream queue has room again", "dropped", d)
		}
		return
	}
	if c.dropped.Add(1) == 1 {
		c.u.log.Warn("upstream queue full: client notifications are dropped until it has room", "method", n.Method, "queue", c.u.queue)
	}
}

// writer passes the queued messages to the link, one at a time, in order.
func (c *upConn) writer() {
	defer close(c.wdone)
	for {
		select {
		case om := <-c.out:
			if !om.state.CompareAndSwap(outQueued, outTaken) {
				continue // its request was cancelled before it left
			}
			if err := c.link.send(om.m); err != nil {
				c.u.log.Debug("upstream send failed", "err", err)
			}
		case <-c.quit:
			return
		}
	}
}

func (c *upConn) endedError() error {
	return jsonrpc.NewError(jsonrpc.CodeInternalError, "the upstream MCP server ended: "+c.endErr.Error())
}

// newConn returns a session's connection, not yet open.
func (u *Upstream) newConn(s *flow.Session) *upConn {
	return &upConn{u: u, s: s, byToken: map[string]*flow.Request{}, ended: make(chan struct{}),
		out: make(chan *outMsg, u.queue), quit: make(chan struct{}), wdone: make(chan struct{})}
}

// open dials the upstream and starts the writer; when the session ends,
// the link is closed and the connection forgotten.
func (c *upConn) open(ctx context.Context) error {
	u, s := c.u, c.s
	link, err := u.dial(ctx, c.recv, c.end)
	if err != nil {
		return err
	}
	c.link = link
	u.links.Add(1)
	go c.writer()
	go func() {
		<-s.Done()
		close(c.quit)
		link.close() // unblocks a send the upstream does not take
		<-c.wdone
		u.forget(c)
		u.links.Done()
	}()
	return nil
}

// forget removes c from the connections, if it is still there.
func (u *Upstream) forget(c *upConn) {
	u.mu.Lock()
	if u.conns[c.s] == c {
		delete(u.conns, c.s)
	}
	u.mu.Unlock()
}

// call sends a request upstream and waits for its result. A request
// cancelled while it waits in the queue is never sent; one cancelled after
// it left is followed by notifications/cancelled.
func (c *upConn) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return c.callAs(ctx, jsonrpc.Int64ID(c.nextID.Add(1)), method, params)
}

// callAs is call with the upstream request's id chosen by the caller.
func (c *upConn) callAs(ctx context.Context, id jsonrpc.ID, method string, params json.RawMessage) (json.RawMessage, error) {
	return c.callUntil(ctx, id, method, params, 0)
}

// callUntil is callAs that, when ctx ends after the request left, waits
// up to answerWait for the upstream's answer to the notifications/cancelled
// it sends (a go-sdk server answers a cancelled request once its handler
// has returned; MCP lets a server answer nothing, hence the bound).
func (c *upConn) callUntil(ctx context.Context, id jsonrpc.ID, method string, params json.RawMessage, answerWait time.Duration) (json.RawMessage, error) {
	ch, forget := c.pending.Add(id)
	defer forget()
	om, err := c.send(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params})
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-c.ended:
		return nil, c.endedError()
	case <-ctx.Done():
		if om.state.CompareAndSwap(outQueued, outDropped) {
			return nil, context.Cause(ctx) // it never left: nothing to cancel
		}
		p := append(append([]byte(`{"requestId":`), id.Raw()...), `,"reason":"cancelled by the MCP-Flow client"}`...)
		// On the handler's goroutine, after the session has answered the
		// cancel: it may wait for room in the queue.
		_, _ = c.send(c.s.Context(), &jsonrpc.Request{Method: protocol.MethodCancelled, Params: p})
		if answerWait > 0 {
			t := time.NewTimer(answerWait)
			defer t.Stop()
			select {
			case <-ch:
			case <-c.ended:
			case <-c.s.Done():
			case <-t.C:
			}
		}
		return nil, context.Cause(ctx)
	}
}

// recv takes one message of the upstream's.
func (c *upConn) recv(m jsonrpc.Message) {
	switch m := m.(type) {
	case *jsonrpc.Response:
		c.pending.Deliver(m)
	case *jsonrpc.Request:
		if m.IsCall() {
			go c.fromUpstream(m)
		} else {
			c.notification(m)
		}
	}
}

// end is called once the upstream's side is over. The requests waiting for
// it fail, and, unless the session is already ending, the MCP-Flow session
// is shut down gracefully: without its upstream it cannot serve anything
// (answers already on their way still go out).
func (c *upConn) end(err error) {
	c.endOnce.Do(func() {
		c.endErr = err
		close(c.ended)
		select {
		case <-c.s.Done():
			return
		default:
		}
		c.u.log.Warn("upstream ended; shutting the session down", "err", err)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = c.s.Shutdown(ctx, "upstream MCP server ended")
		}()
	})
}

// fromUpstream passes the upstream's request to the MCP-Flow client.
func (c *upConn) fromUpstream(m *jsonrpc.Request) {
	c.u.log.Debug("upstream request", "method", m.Method, "id", m.ID.String())
	if c.clientModern || c.upModern.Load() {
		var r *jsonrpc.Response
		if m.Method == protocol.MethodPing {
			r = &jsonrpc.Response{ID: m.ID, Result: json.RawMessage("{}")} // the bridge is the peer it checks
		} else {
			c.u.log.Warn("upstream request toward a 2026-07-28 client refused: it has no server-initiated requests", "method", m.Method)
			r = jsonrpc.NewErrorResponse(m.ID, errNoServerRequests(m.Method))
		}
		_, _ = c.send(c.s.Context(), r)
		return
	}
	resp, err := c.s.Call(c.s.Context(), m.Method, m.Params)
	c.u.log.Debug("upstream request answered", "method", m.Method, "id", m.ID.String(), "err", err)
	var je *jsonrpc.Error
	var r *jsonrpc.Response
	switch {
	case errors.As(err, &je):
		r = jsonrpc.NewErrorResponse(m.ID, je)
	case err != nil:
		r = jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error()))
	default:
		r = &jsonrpc.Response{ID: m.ID, Result: resp.Result}
	}
	_, _ = c.send(c.s.Context(), r)
}

func (c *upConn) notification(n *jsonrpc.Request) {
	if n.Method == protocol.MethodProgress {
		var p flow.Progress
		if json.Unmarshal(n.Params, &p) == nil {
			c.mu.Lock()
			req := c.byToken[string(p.ProgressToken)]
			c.mu.Unlock()
			if req != nil {
				_ = req.Progress(p.Progress, p.Total, p.Message)
				return
			}
		}
	}
	if v := mcpjson.MetaValue(n.Params, protocol.MetaSubscriptionID); v != nil {
		// A 2026 upstream's subscription: named by our id upstream, by the
		// client's on MCP-Flow (spec §11.7).
		c.mu.Lock()
		id, ok := c.subs[string(v)]
		c.mu.Unlock()
		if ok {
			if p, err := mcpjson.EditMeta(n.Params, mcpjson.Set(protocol.MetaSubscriptionID, []byte(id.Raw()))); err == nil {
				_ = c.s.Notify(n.Method, json.RawMessage(p))
			}
			return
		}
		if !c.clientModern {
			c.fromLegacyListen(v, n) // the bridge's own subscriptions (events.go)
			return
		}
	}
	if c.clientModern && protocol.IsChange(n.Method) {
		// A 2026-07-28 client hears changes on its subscriptions only
		// (spec §11.7); a 2026 upstream's name their own (era.go).
		var p struct{ URI string }
		_ = json.Unmarshal(n.Params, &p)
		c.s.Changed(n.Method, p.URI)
		return
	}
	_ = c.s.Notify(n.Method, n.Params)
}

// initCapabilities is the capabilities member of a 2025 upstream's
// initialize result.
func initCapabilities(initRes json.RawMessage) json.RawMessage {
	var r struct{ Capabilities json.RawMessage }
	_ = json.Unmarshal(initRes, &r) // none: nothing honoured
	return r.Capabilities
}

// listen forwards a client's subscriptions/listen to a 2026-07-28
// upstream (spec §11.7): the upstream names the subscription by our id,
// which notification and the graceful result put back to the client's.
func (c *upConn) listen(ctx context.Context, req *flow.Request, params json.RawMessage) (json.RawMessage, error) {
	id := jsonrpc.Int64ID(c.nextID.Add(1))
	c.mu.Lock()
	if c.subs == nil {
		c.subs = map[string]jsonrpc.ID{}
	}
	c.subs[id.Raw()] = req.ID
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.subs, id.Raw())
		c.mu.Unlock()
	}()
	res, err := c.callAs(ctx, id, protocol.MethodListen, params)
	if err == nil && mcpjson.MetaValue(res, protocol.MetaSubscriptionID) != nil {
		if r, e := mcpjson.EditMeta(res, mcpjson.Set(protocol.MetaSubscriptionID, []byte(req.ID.Raw()))); e == nil {
			res = r
		}
	}
	return res, err
}
