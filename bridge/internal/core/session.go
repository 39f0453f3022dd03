package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The core's MCP-Flow session (spec §10, §11.6): dialled with the client's
// initialize (or on a 2026-07-28 client's first request), watched, lost and
// redialled; the server's requests to the client; the end (finish).

// initialize dials the MCP-Flow server with the host's initialize and
// answers with the server's result, minus the transport object. The request
// is kept: a reconnection sends it again (spec §10).
func (b *Core) initialize(ctx context.Context, m *jsonrpc.Request) *jsonrpc.Response {
	var p flow.InitializeParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "initialize params: "+err.Error()))
	}
	s, err := b.dial(ctx, p)
	if err != nil {
		u, _ := b.unreachable(err)
		e := jsonrpc.NewError(jsonrpc.CodeInternalError, u.Error())
		e.Data, _ = json.Marshal(map[string]string{"server": u.URL, "reason": u.Why, "fix": u.Fix})
		return jsonrpc.NewErrorResponse(m.ID, e)
	}
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		s.Close()
		return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, "the bridge is closing"))
	}
	b.initReq = m
	b.proto = s.InitializeResult().ProtocolVersion
	b.setSessionLocked(s)
	b.mu.Unlock()
	b.watch(s)
	res := *s.InitializeResult()
	out := map[string]any{"protocolVersion": res.ProtocolVersion, "capabilities": res.Capabilities, "serverInfo": res.ServerInfo}
	if res.Instructions != "" {
		out["instructions"] = res.Instructions
	}
	r, _ := jsonrpc.NewResult(m.ID, out)
	return r
}

// dial opens an MCP-Flow session with the host's initialize params (flow.Dial
// sends notifications/initialized).
func (b *Core) dial(ctx context.Context, p flow.InitializeParams) (*flow.Session, error) {
	cc := b.cfg.Client
	cc.Info, cc.Capabilities, cc.ProtocolVersion = p.ClientInfo, p.Capabilities, p.ProtocolVersion
	if b.isStateless() {
		// Each request carries its client's own _meta (version and
		// capabilities), which the session passes on as they are.
		cc.ProtocolVersion, cc.Capabilities = protocol.MCP20260728, nil
	}
	// A plain MCP host expects every progress notification, in order and
	// before the result: progress rides the control stream, not datagrams
	// (which may be lost or overtaken).
	cc.DisableDatagrams = true
	if b.cfg.Token != nil {
		cc.Token = b.cfg.Token // read again on every dial
	}
	cc.Handler = flow.HandlerFunc(b.forwardToHost)
	cc.Hooks.Notification = func(_ *flow.Session, n *jsonrpc.Request) {
		b.write(n) // flow keeps $/ notifications to itself
	}
	start := time.Now()
	var shook atomic.Bool // a QUIC handshake completed: the server answered
	then := cc.Handshaked
	cc.Handshaked = func() {
		shook.Store(true)
		if then != nil {
			then()
		}
	}
	s, err := b.dialIn(ctx, cc)
	if err != nil {
		return nil, diagnose(b.cfg.URL, err, time.Since(start), shook.Load())
	}
	b.mu.Lock()
	b.reached = true
	b.mu.Unlock()
	return s, nil
}

// unreachable says why a dial failed, once (spec §10, "Reaching the
// server"): a refused token as refused does; a final failure of the stdio
// front's first dial with ExitIfUnreachable goes to lost (gaveUp: Run
// returns it, and mcp-flow prints it); anything else is one ERROR line
// naming the cause and its fix.
func (b *Core) unreachable(err error) (u *UnreachableError, gaveUp bool) {
	u = Diagnose(b.cfg.URL, err, 0)
	if b.refused(err) {
		return u, false
	}
	b.mu.Lock()
	first := !b.reached
	b.mu.Unlock()
	if b.giveUp && first && u.Final {
		select {
		case b.lost <- u:
		default:
		}
		return u, true
	}
	b.log.Error("cannot reach the MCP-Flow server", "server", u.URL, "why", u.Why, "fix", u.Fix)
	return u, false
}

// forwardToHost sends the server's request (sampling, roots, elicitation)
// to the host under an id of the bridge's own, and returns its answer.
func (b *Core) forwardToHost(ctx context.Context, req *flow.Request) (any, error) {
	if b.isStateless() {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "a 2026-07-28 client takes no requests from the server (it asks for input with input_required results, spec §11.6)")
	}
	id := jsonrpc.StringID(fmt.Sprintf("mcp-flow-%d", b.hostID.Add(1)))
	ch, forget := b.hostWait.Add(id)
	defer forget()
	b.log.Debug("server request to the host", "method", req.Method, "id", id.String())
	b.write(&jsonrpc.Request{ID: id, Method: req.Method, Params: req.Params})
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodCancelled, map[string]any{"requestId": json.RawMessage(id.Raw())})
		b.write(n)
		return nil, ctx.Err()
	}
}

// current returns the session a request goes on: nil before initialize;
// while the front reconnects, the next session, waited for up to
// ReconnectWait (spec §10); a *ServerLostError when none comes in time, or
// at once when this front does not reconnect. Either way the request was
// not sent (NotSent: -32006, it may be retried).
func (b *Core) current(ctx context.Context) (*flow.Session, error) {
	if b.isStateless() {
		return b.statelessSession(ctx)
	}
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		s, changed, inited, closing, lostErr, redialing := b.sess, b.changed, b.initReq != nil, b.closing, b.lostErr, b.redialing
		b.mu.Unlock()
		if s != nil && s.Err() == nil && s.State() == flow.StateReady {
			return s, nil
		}
		switch {
		case !inited:
			return nil, nil
		case s == nil && (closing || !b.Reconnects() && !redialing):
			return nil, &ServerLostError{URL: b.cfg.URL, Err: lostErr, NotSent: true}
		}
		var ended <-chan struct{} // a draining session: wait for its end
		if s != nil {
			select {
			case <-s.Done():
			default:
				ended = s.Done()
			}
		}
		if timeout == nil {
			t := time.NewTimer(b.cfg.ReconnectWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
		case <-ended:
		case <-timeout:
			return nil, &ServerLostError{URL: b.cfg.URL, Err: lostErr, Waited: b.cfg.ReconnectWait, NotSent: true}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// statelessSession returns the core's 2026-07-28 MCP-Flow session, dialling
// it when there is none (or when the one there drains); one dial at a time,
// which the other requests wait for. Unless ExitOnDisconnect, a failed dial
// is tried again, after ReconnectMin doubling up to ReconnectMax, for up to
// ReconnectWait (spec §10: a server restarting behind a balancer answers
// again soon); then the request fails with a *ServerLostError that says it
// was not sent.
func (b *Core) statelessSession(ctx context.Context) (*flow.Session, error) {
	var (
		deadline *time.Timer // ReconnectWait from this request's first failed dial
		delay    = b.cfg.ReconnectMin
	)
	defer func() {
		if deadline != nil {
			deadline.Stop()
		}
	}()
	// again waits before the next dial; a *ServerLostError when
	// ReconnectWait has passed since the first failure.
	again := func(err error) error {
		if !b.Reconnects() || isRefusal(err) {
			return &ServerLostError{URL: b.cfg.URL, Err: err, NotSent: true}
		}
		if deadline == nil {
			deadline = time.NewTimer(b.cfg.ReconnectWait)
		}
		t := time.NewTimer(delay)
		defer t.Stop()
		delay = min(2*delay, b.cfg.ReconnectMax)
		select {
		case <-t.C:
			return nil
		case <-deadline.C:
			return &ServerLostError{URL: b.cfg.URL, Err: err, Waited: b.cfg.ReconnectWait, NotSent: true}
		case <-b.stop.Done():
			return &ServerLostError{URL: b.cfg.URL, Err: err, NotSent: true}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		b.mu.Lock()
		if s := b.sess; s != nil && s.Err() == nil && s.State() == flow.StateReady {
			b.mu.Unlock()
			return s, nil
		}
		if b.closing {
			err := b.lostErr
			b.mu.Unlock()
			return nil, &ServerLostError{URL: b.cfg.URL, Err: err, NotSent: true}
		}
		if d := b.dialing; d != nil {
			b.mu.Unlock()
			select {
			case <-d:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			b.mu.Lock()
			err := b.dialErr
			b.mu.Unlock()
			if err != nil {
				if err := again(err); err != nil {
					return nil, err
				}
			}
			continue
		}
		d := make(chan struct{})
		b.dialing = d
		b.mu.Unlock()
		// The dial is the core's, not the request's: a client that goes
		// away does not fail it for the others waiting.
		s, err := b.dial(b.stop, flow.InitializeParams{})
		b.mu.Lock()
		b.dialing, b.dialErr = nil, err
		if err == nil && b.closing {
			err = fmt.Errorf("the bridge is closing")
			b.dialErr = err
			b.mu.Unlock()
			close(d)
			s.Close()
			return nil, &ServerLostError{URL: b.cfg.URL, Err: err, NotSent: true}
		}
		if err == nil {
			b.lostErr = nil
			b.setSessionLocked(s)
		} else {
			b.lostErr = err
		}
		b.mu.Unlock()
		close(d)
		if err != nil {
			if _, gaveUp := b.unreachable(err); gaveUp || isRefusal(err) {
				// Not tried again for this request: the token source has
				// no other token now (the next request dials again), or
				// the stdio front gives up (ExitIfUnreachable).
				return nil, &ServerLostError{URL: b.cfg.URL, Err: err, NotSent: true}
			}
			if err := again(err); err != nil {
				return nil, err
			}
			continue
		}
		b.watch(s)
		return s, nil
	}
}

// watch waits for the end of s and handles it unless the host ended first.
func (b *Core) watch(s *flow.Session) {
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		select {
		case <-s.Done():
		case <-b.stop.Done():
			return
		}
		b.mu.Lock()
		if b.closing || b.sess != s {
			b.mu.Unlock()
			return
		}
		err := s.Err()
		b.lostErr = err
		b.setSessionLocked(nil)
		stateless := b.stateless
		expired := b.cfg.redialOnExpiry && s.PeerShutdownReason() == flow.ReasonTokenExpired
		b.redialing = expired && b.cfg.ExitOnDisconnect
		b.mu.Unlock()
		if stateless { // the next request dials again: no state was lost
			b.log.Warn("MCP-Flow session lost; its requests in flight failed", "server", b.cfg.URL, "err", err)
			return
		}
		b.log.Warn("MCP-Flow session lost; its requests in flight failed, and the server's state for this host is gone "+
			"(resource subscriptions, the logging/setLevel level, requests from the server to the host, progress and execution streams)",
			"server", b.cfg.URL, "err", err)
		switch {
		case !b.cfg.ExitOnDisconnect: // every front, by default
			b.bg.Add(1)
			go b.reconnect()
		case expired:
			// The server ended the session for its client's expired token
			// (PassToken): the server is there, so the session is dialled
			// again with the subject's latest token.
			b.log.Debug("the token the session dialled with expired; dialling again with the client's latest")
			b.bg.Add(1)
			go b.reconnect()
		case b.onLost != nil: // an HTTP front's session ends
			b.onLost(err)
		default: // the stdio front exits
			b.lost <- &ServerLostError{URL: b.cfg.URL, Err: err}
		}
	}()
}

// reconnect dials the server again with the host's original initialize,
// with a backoff from ReconnectMin doubling up to ReconnectMax, until it
// succeeds or the host's input ends (spec §10). Each attempt is logged.
func (b *Core) reconnect() {
	defer b.bg.Done()
	b.mu.Lock()
	req := b.initReq
	b.mu.Unlock()
	var p flow.InitializeParams
	_ = json.Unmarshal(req.Params, &p) // it was decoded once already
	delay := b.cfg.ReconnectMin
	t := time.NewTimer(delay)
	defer t.Stop()
	var fresh <-chan struct{} // after a refusal with PassToken: the client's next token
	for attempt := 1; ; attempt++ {
		select {
		case <-t.C:
		case <-fresh:
		case <-b.stop.Done():
			return
		}
		fresh = nil
		var next <-chan struct{}
		if b.cfg.tokenFresh != nil {
			next = b.cfg.tokenFresh() // taken before the dial: an offer during it is not missed
		}
		b.log.Warn("reconnecting to the MCP-Flow server", "server", b.cfg.URL, "attempt", attempt)
		s, err := b.dial(b.stop, p)
		if b.stop.Err() != nil { // the host's input ended
			if s != nil {
				s.Close()
			}
			return
		}
		if err == nil {
			b.mu.Lock()
			if b.closing {
				b.mu.Unlock()
				s.Close()
				return
			}
			b.lostErr, b.redialing = nil, false
			b.setSessionLocked(s)
			b.mu.Unlock()
			b.watch(s)
			b.log.Warn("reconnected to the MCP-Flow server; the host's initialize was sent again", "server", b.cfg.URL,
				"attempt", attempt, "serverInfo", s.InitializeResult().ServerInfo.Name)
			if v := s.InitializeResult().ProtocolVersion; v != b.Version() {
				b.log.Warn("the server now answers another MCP version than the host was told", "was", b.Version(), "now", v)
			}
			return
		}
		delay = min(2*delay, b.cfg.ReconnectMax)
		if b.refused(err) {
			// A refused token is not a server coming back: no quick
			// retries, only ReconnectMax apart until the token source (a
			// token file rewritten) has another; with PassToken, the
			// next attempt waits for the client's next token instead.
			delay = b.cfg.ReconnectMax
			if next != nil {
				fresh, delay = next, time.Duration(1<<62)
			}
		}
		var when any = delay
		if fresh != nil {
			when = "on the client's next token"
		}
		b.log.Warn("reconnection failed", "server", b.cfg.URL, "attempt", attempt, "err", err, "next", when)
		b.mu.Lock()
		b.lostErr = err
		b.mu.Unlock()
		t.Reset(delay)
	}
}

// ServerLostError answers the host's requests when the MCP-Flow session
// ended other than by the host's EOF (spec §10): the requests in flight,
// and those that found no new session in time.
type ServerLostError struct {
	URL    string
	Err    error         // why the session ended (or the last reconnection failed)
	Waited time.Duration // how long the request waited for a reconnection
	// NotSent: the request never reached the server (no session came in
	// time, or the front does not reconnect): it did not run and may be
	// retried, so the client gets -32006 (spec §8), not -32603.
	NotSent bool
}

var _ error = (*ServerLostError)(nil)

func (e *ServerLostError) Error() string {
	msg := "MCP-Flow server " + e.URL + " lost"
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if u, ok := e.Err.(*UnreachableError); ok { // a failed dial says it all
		msg = u.Error()
	}
	if e.Waited > 0 {
		msg += fmt.Sprintf(" (no new session within %v)", e.Waited)
	}
	if e.NotSent {
		msg += "; the request was not sent (it did not run: retry it)"
	}
	return msg
}

func (e *ServerLostError) Unwrap() error { return e.Err }

// lostError is the JSON-RPC error for a request that lost its server:
// -32603 for one that was in flight (it may have run), -32006 for one that
// was never sent (spec §8: it did not run; retry on a new session).
func lostError(err error) *jsonrpc.Error {
	e := jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error())
	var le *ServerLostError
	if errors.As(err, &le) {
		if le.NotSent {
			e.Code = jsonrpc.CodeShuttingDown
		}
		why := ""
		if le.Err != nil {
			why = le.Err.Error()
		}
		e.Data, _ = json.Marshal(map[string]string{"server": le.URL, "reason": why})
	}
	return e
}

// Finish waits for the host's requests in flight, then ends the session
// and stops reconnecting.
func (b *Core) Finish() error {
	b.wg.Wait()
	b.mu.Lock()
	s := b.sess
	b.closing = true
	b.mu.Unlock()
	b.halt()
	if s != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx, "the MCP client went away"); err != nil {
			b.log.Debug("shutdown", "err", err)
		}
	}
	b.bg.Wait()
	return nil
}

// refused reports whether err is the server's refusal of the front's
// access token (a CONNECT answered 401 or 403, flow.RefusedError, spec
// §9.1), and says so on the log (stderr) with the server's challenge, which
// names what it wants (error, scope, resource_metadata); the token never
// appears.
func (b *Core) refused(err error) bool {
	if !isRefusal(err) {
		return false
	}
	var re *flow.RefusedError
	errors.As(err, &re)
	if b.cfg.tokenFresh != nil {
		// A client's token (PassToken) that expired or was revoked: the
		// client's business, not the operator's.
		b.log.Info("the MCP-Flow server refused the client's access token; waiting for its next one", "server", re.URL, "status", re.Status, "challenge", re.Challenge)
		return true
	}
	b.log.Error("the MCP-Flow server refused the access token", "server", re.URL, "status", re.Status, "challenge", re.Challenge)
	return true
}

// isRefusal reports whether err is a CONNECT answered 401 or 403.
func isRefusal(err error) bool {
	var re *flow.RefusedError
	return errors.As(err, &re) && (re.Status == http.StatusUnauthorized || re.Status == http.StatusForbidden)
}
