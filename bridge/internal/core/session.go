package core

// This file is long because it is the core's upstream session through its
// whole life: the initialize that dials it, the stateful and stateless
// sessions, the watch and the reconnect, and the errors a lost or refusing
// server gives the host.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The core's MCP-Flow session (spec §10): dialled with the client's
// initialize, watched, lost and redialled; the end (Finish). A 2026-07-28
// client's session is stateless_session.go's, the server's requests to the
// client forward.go's, the error of a lost session lost.go's.

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

// Finish waits for the host's requests in flight, then ends the session
// and stops reconnecting. Its subscriptions/listen requests, which would
// never end, are cancelled first: no one is left to hear them (§11.7).
func (b *Core) Finish() error {
	b.endListens()
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
