package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The client's messages through the core (spec §10): each message or batch
// dispatched in the client's order, requests called on the MCP-Flow session
// with their cancellation, notifications passed on.
//
// This file is long because it is the one path of a client's message, from
// Receive to the call on the session (initialize, batches, cancellation,
// subscriptions/listen), kept in the order a message takes it.

// Receive takes one decoded message or batch of the client's: invalid
// elements are answered, a batch goes to batch, the rest to dispatch.
func (b *Core) Receive(ctx context.Context, p jsonrpc.Payload) {
	msgs, replies := jsonrpc.Validate(p)
	if p.Batch {
		b.batch(ctx, msgs, replies)
		return
	}
	for _, rep := range replies {
		b.write(rep)
	}
	for _, m := range msgs {
		b.Dispatch(ctx, m)
	}
}

// ParseError answers a message that could not be read or decoded.
func (b *Core) ParseError(err error) {
	b.write(jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeParseError, err.Error())))
}

// DecodeJSON decodes one message or batch of the client's.
func DecodeJSON(msg []byte) (jsonrpc.Payload, error) { return codec.Default(codec.JSON).Decode(msg) }

// BatchesAllowed reports whether MCP protocol version v has JSON-RPC
// batches: 2025-03-26 added them, 2025-06-18 removed them (MCP changelog
// 2025-06-18).
func BatchesAllowed(v string) bool { return v != "" && v < "2025-06-18" }

// BatchError is the answer to a batch the session's protocol version does
// not allow, or one sent before initialize (which 2025-03-26 forbids in a
// batch).
func BatchError(version string) *jsonrpc.Response {
	msg := "JSON-RPC batches are not part of MCP " + version + " (only 2025-03-26 has them)"
	if version == "" {
		msg = "a batch before initialize: initialize must be sent alone (MCP 2025-03-26 lifecycle)"
	}
	return jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msg))
}

func alreadyInitialized(id jsonrpc.ID) *jsonrpc.Response {
	return jsonrpc.NewErrorResponse(id, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "already initialized"))
}

// batch answers a batch (JSON-RPC 2.0 §6) where the protocol version allows
// it: its requests run concurrently and their responses go out together in
// one array, in any order, once all are in; a batch of notifications and
// responses only gets no answer. Elsewhere the whole batch is refused with
// one -32600 error and nothing in it is processed.
func (b *Core) batch(ctx context.Context, msgs []jsonrpc.Message, replies []*jsonrpc.Response) {
	if v := b.Version(); !BatchesAllowed(v) {
		b.write(BatchError(v))
		return
	}
	var mu sync.Mutex
	out := slices.Clone(replies)
	var calls sync.WaitGroup
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			b.Dispatch(ctx, m) // notifications and responses
			continue
		}
		if req.Method == protocol.MethodInitialize {
			out = append(out, alreadyInitialized(req.ID))
			continue
		}
		b.wg.Add(1)
		calls.Add(1)
		cctx, release := b.track(ctx, req.ID)
		go func() {
			defer b.wg.Done()
			defer calls.Done()
			defer release()
			if r := b.call(ctx, cctx, req); r != nil {
				mu.Lock()
				out = append(out, r)
				mu.Unlock()
			}
		}()
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		calls.Wait()
		if len(out) > 0 {
			for _, r := range out {
				b.logMessage("to host", r)
			}
			b.front.EmitBatch(out)
		}
	}()
}

// Dispatch handles one message of the client's (not a batch): a response
// to a request forwarded from the server, a notification, or a request.
func (b *Core) Dispatch(ctx context.Context, m jsonrpc.Message) {
	b.logMessage("from host", m)
	switch m := m.(type) {
	case *jsonrpc.Response:
		b.hostWait.Deliver(m)
	case *jsonrpc.Request:
		if !m.IsCall() {
			b.notification(m)
			return
		}
		if b.takeStateless(m) {
			if r := StatelessRefusal(m); r != nil {
				b.write(r)
				return
			}
		} else if m.Method == protocol.MethodInitialize {
			b.mu.Lock()
			done := b.initReq != nil
			b.mu.Unlock()
			if done {
				b.write(alreadyInitialized(m.ID))
				return
			}
			// On the reading goroutine: requests that follow wait for it.
			b.write(b.initialize(ctx, m))
			return
		}
		var opts []flow.CallOption
		b.wg.Add(1)
		cctx, release := b.track(ctx, m.ID)
		if m.Method == protocol.MethodListen {
			opts = append(opts, SubscriptionTo(m.ID, func(n *jsonrpc.Request) { b.write(n) }))
			release = b.listening(m.ID, release)
		}
		go func() {
			defer b.wg.Done()
			defer release()
			if r := b.Answer(ctx, cctx, m, opts...); r != nil {
				b.send(r)
			}
		}()
	}
}

func (b *Core) notification(n *jsonrpc.Request) {
	switch n.Method {
	case protocol.MethodCancelled:
		var p flow.CancelParams
		if json.Unmarshal(n.Params, &p) == nil {
			b.mu.Lock()
			cancel := b.pending[p.RequestID.Raw()]
			b.mu.Unlock()
			if cancel != nil {
				cancel() // Call sends $/cancel
			}
		}
	case protocol.MethodInitialized:
		// flow.Dial has sent it already.
	default:
		if s := b.Session(); s != nil {
			_ = s.Notify(n.Method, n.Params)
		}
	}
}

// track registers a request of the host, on the reading goroutine so that
// a notifications/cancelled read after it finds it (while it waits for a
// session, too): cctx is ctx cancelled by it; release forgets the request.
func (b *Core) track(ctx context.Context, id jsonrpc.ID) (cctx context.Context, release func()) {
	cctx, cancel := context.WithCancel(ctx)
	b.mu.Lock()
	b.pending[id.Raw()] = cancel
	b.mu.Unlock()
	return cctx, func() {
		cancel()
		b.mu.Lock()
		delete(b.pending, id.Raw())
		b.mu.Unlock()
	}
}

// Reply is the core's answer to one request of the client: resp (an
// error, say), or the request's id and its result as inline left it, a
// splice that the front writes once (Front.EmitResult, spec §10).
type Reply struct {
	resp   *jsonrpc.Response
	id     jsonrpc.ID
	result *mcpjson.Splice
}

// AppendResult appends the response to id with result, writing the
// splice once: envelope head, result, closing brace.
func AppendResult(dst []byte, id jsonrpc.ID, result *mcpjson.Splice) []byte {
	return append(result.AppendTo(jsonrpc.AppendResultHead(dst, id)), '}')
}

// ResultLen is the length of what AppendResult appends.
func ResultLen(id jsonrpc.ID, result *mcpjson.Splice) int {
	return jsonrpc.ResultHeadLen(id) + result.Len() + 1
}

// Encode returns r as one response and its JSON text, the result written
// once (EncodeResult).
func (r *Reply) Encode() (*jsonrpc.Response, []byte) {
	if r.result == nil {
		return r.resp, jsonrpc.AppendJSON(nil, r.resp)
	}
	return EncodeResult(r.id, r.result)
}

// EncodeResult returns the response to id with result and its JSON text,
// the splice written once (AppendResult; the response's Result is its span
// in the text).
func EncodeResult(id jsonrpc.ID, result *mcpjson.Splice) (*jsonrpc.Response, []byte) {
	e := AppendResult(make([]byte, 0, ResultLen(id, result)), id, result)
	return &jsonrpc.Response{ID: id, Result: e[jsonrpc.ResultHeadLen(id) : len(e)-1]}, e
}

// response returns r as one response, its result written out (nil for
// nil).
func (r *Reply) response() *jsonrpc.Response {
	switch {
	case r == nil:
		return nil
	case r.result != nil:
		return &jsonrpc.Response{ID: r.id, Result: r.result.Bytes()}
	}
	return r.resp
}

// send hands r to the front.
func (b *Core) send(r *Reply) {
	if r.result == nil {
		b.write(r.resp)
		return
	}
	b.logMessage("to host", &jsonrpc.Response{ID: r.id})
	b.front.EmitResult(r.id, r.result)
}

// call is Answer's reply as one response, for a batch.
func (b *Core) call(ctx, cctx context.Context, m *jsonrpc.Request, opts ...flow.CallOption) *jsonrpc.Response {
	return b.Answer(ctx, cctx, m, opts...).response()
}

// Answer answers one request of the host through the MCP-Flow session;
// cctx is ctx cancelled by the host (track). nil when the host cancelled
// it (MCP sends no response then).
//
// A request that did not run because its session was shutting down (the
// session refused it, or the server answered -32006) goes on the next
// session when the front reconnects (spec §7.2, §10);
// otherwise, or when ReconnectWait has passed since its first refusal, the
// client gets the -32006.
func (b *Core) Answer(ctx, cctx context.Context, m *jsonrpc.Request, opts ...flow.CallOption) *Reply {
	var deadline <-chan time.Time // ReconnectWait from the first refusal
	for {
		s, err := b.current(cctx)
		switch {
		case cctx.Err() != nil && ctx.Err() == nil:
			return nil // the host cancelled: MCP sends no response
		case err != nil:
			return &Reply{resp: jsonrpc.NewErrorResponse(m.ID, lostError(err))}
		case s == nil:
			if m.Method == protocol.MethodPing {
				return &Reply{resp: &jsonrpc.Response{ID: m.ID, Result: json.RawMessage("{}")}}
			}
			return &Reply{resp: jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "not initialized"))}
		}
		r, refused := b.callOn(ctx, cctx, s, m, opts...)
		if refused == nil {
			return r
		}
		if !b.Reconnects() {
			return &Reply{resp: jsonrpc.NewErrorResponse(m.ID, refused)}
		}
		// It did not run: it goes on the next session, once this one
		// stops being ready (its $/shutdown may come a little after the
		// server's first refusal) or after ReconnectMin.
		if deadline == nil {
			t := time.NewTimer(b.cfg.ReconnectWait)
			defer t.Stop()
			deadline = t.C
		}
		wait := time.NewTimer(b.cfg.ReconnectMin)
		select {
		case <-s.Done():
		case <-wait.C:
		case <-deadline:
			wait.Stop()
			return &Reply{resp: jsonrpc.NewErrorResponse(m.ID, refused)}
		case <-cctx.Done():
		}
		wait.Stop()
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

// callOn answers m on session s; cctx is ctx cancelled by the host's
// notifications/cancelled. refused, when not nil, is why m did not run:
// s was shutting down (or had ended) before m left, or the server refused
// it with -32006 (spec §7.2); m may go on another session.
func (b *Core) callOn(ctx, cctx context.Context, s *flow.Session, m *jsonrpc.Request, opts ...flow.CallOption) (_ *Reply, refused *jsonrpc.Error) {
	if err := s.Err(); err != nil { // ended since current: m was not sent
		return nil, lostError(&ServerLostError{URL: b.cfg.URL, Err: err, NotSent: true})
	}
	// The params go as they came: a progress token of the host's comes
	// back in the server's notifications/progress (on the control stream: a
	// front asks for no datagrams), which reach the host through the
	// Notification hook like any other notification.
	resp, err := s.Call(cctx, m.Method, m.Params, opts...)
	if cctx.Err() != nil && ctx.Err() == nil {
		return nil, nil // the host cancelled: MCP sends no response
	}
	var je *jsonrpc.Error
	var se *flow.SessionError
	switch {
	case errors.As(err, &je) && je.Code == jsonrpc.CodeShuttingDown:
		return nil, je
	case errors.As(err, &se):
		// The session ended with the request in flight (spec §10).
		return &Reply{resp: jsonrpc.NewErrorResponse(m.ID, lostError(&ServerLostError{URL: b.cfg.URL, Err: se}))}, nil
	case je != nil:
		return &Reply{resp: jsonrpc.NewErrorResponse(m.ID, je)}, nil
	case err != nil:
		return &Reply{resp: jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, "MCP-Flow: "+err.Error()))}, nil
	}
	result, err := b.inline(cctx, s, resp)
	if err != nil {
		if serr := s.Err(); serr != nil {
			err = &ServerLostError{URL: b.cfg.URL, Err: fmt.Errorf("%w (%v)", serr, err)}
			return &Reply{resp: jsonrpc.NewErrorResponse(m.ID, lostError(err))}, nil
		}
		return &Reply{resp: jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error()))}, nil
	}
	if b.isStateless() {
		result = withCacheHints(m.Method, result)
	}
	return &Reply{id: m.ID, result: result}, nil
}
