package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// front is what a front gives its core (spec §10): where the messages for
// the plain MCP client go, and where an execution stream past the inline
// limit goes. The stdio front writes to stdout and to files in its stream
// directory; the HTTP front routes to SSE streams.
type front interface {
	// emit hands one message to the client. It is called concurrently, from
	// the core's goroutines and from the MCP-Flow session's hooks, so it
	// must not wait on the client: a front queues (spec §10, backpressure).
	emit(m jsonrpc.Message)
	// emitBatch hands the responses to one JSON-RPC batch, together.
	emitBatch(rs []*jsonrpc.Response)
	// offload stores an execution stream past the inline limit, reading r
	// to its end, and returns the URI the client fetches it from and its
	// size; name is the link's name, the file name a download suggests. On
	// error nothing is left under that URI.
	offload(ctx context.Context, name, mime string, r io.Reader) (uri string, size int64, err error)
}

// core is the front-neutral half of a front: one plain MCP client ↔ one
// MCP-Flow client session (spec §10). It dials the server with the client's
// initialize, reconnects (or reports the loss), passes requests with their
// cancellation and progress, forwards the server's requests to the client,
// and rewrites results with execution streams into MCP content. Everything
// for the client goes through its front.
//
// dispatch and receive are called by the front's reading goroutine, in the
// order the client sent its messages; finish once, after the last of them.
type core struct {
	cfg   StdioConfig
	log   *slog.Logger
	front front

	mu       sync.Mutex
	sess     *flow.Session                 // nil before initialize and while reconnecting
	initReq  *jsonrpc.Request              // the host's initialize, once it succeeded: replayed on reconnection
	proto    string                        // the MCP version the host was answered
	changed  chan struct{}                 // closed (and replaced) whenever sess changes
	lostErr  error                         // why the last session ended, while there is none
	closing  bool                          // the host's input ended: no more reconnection
	pending  map[string]context.CancelFunc // the host's requests in flight, by id
	hostWait waiters                       // the host's answers to requests forwarded from the server
	hostID   atomic.Uint64
	wg       sync.WaitGroup // the host's requests in flight
	// bg counts the watchers of sessions and the reconnection loop; stop
	// ends them.
	bg   sync.WaitGroup
	stop context.Context
	halt context.CancelFunc
	// onLost, when set, replaces reconnection (the HTTP front ends its
	// session); lost receives the end of the session with ExitOnDisconnect.
	onLost func(error)
	lost   chan error
	// stateless: the client speaks MCP 2026-07-28 (spec §11.6): no
	// initialize, one MCP-Flow session of that revision, dialled on demand
	// (dialing is closed when the dial under way ends, dialErr its error).
	stateless bool
	dialing   chan struct{}
	dialErr   error
}

// newCore returns a core that talks to the client through f; with onLost
// set, a lost MCP-Flow session is reported to it instead of reconnecting.
func newCore(cfg StdioConfig, f front, onLost func(error)) *core {
	cfg = cfg.withDefaults()
	b := &core{cfg: cfg, log: cfg.Logger, front: f, onLost: onLost, pending: map[string]context.CancelFunc{},
		changed: make(chan struct{}), lost: make(chan error, 1)}
	b.stop, b.halt = context.WithCancel(context.Background())
	return b
}

// receive takes one decoded message or batch of the client's: invalid
// elements are answered, a batch goes to batch, the rest to dispatch.
func (b *core) receive(ctx context.Context, p jsonrpc.Payload) {
	msgs, replies := jsonrpc.Validate(p)
	if p.Batch {
		b.batch(ctx, msgs, replies)
		return
	}
	for _, rep := range replies {
		b.write(rep)
	}
	for _, m := range msgs {
		b.dispatch(ctx, m)
	}
}

// parseError answers a message that could not be read or decoded.
func (b *core) parseError(err error) {
	b.write(jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeParseError, err.Error())))
}

// decodeJSON decodes one message or batch of the client's.
func decodeJSON(msg []byte) (jsonrpc.Payload, error) { return codec.Default(codec.JSON).Decode(msg) }

// batchesAllowed reports whether MCP protocol version v has JSON-RPC
// batches: 2025-03-26 added them, 2025-06-18 removed them (MCP changelog
// 2025-06-18).
func batchesAllowed(v string) bool { return v != "" && v < "2025-06-18" }

// batchError is the answer to a batch the session's protocol version does
// not allow, or one sent before initialize (which 2025-03-26 forbids in a
// batch).
func batchError(version string) *jsonrpc.Response {
	msg := "JSON-RPC batches are not part of MCP " + version + " (only 2025-03-26 has them)"
	if version == "" {
		msg = "a batch before initialize: initialize must be sent alone (MCP 2025-03-26 lifecycle)"
	}
	return jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msg))
}

func alreadyInitialized(id jsonrpc.ID) *jsonrpc.Response {
	return jsonrpc.NewErrorResponse(id, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "already initialized"))
}

// version is the session's negotiated MCP protocol version ("" before
// initialize).
func (b *core) version() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.proto
}

// batch answers a batch (JSON-RPC 2.0 §6) where the protocol version allows
// it: its requests run concurrently and their responses go out together in
// one array, in any order, once all are in; a batch of notifications and
// responses only gets no answer. Elsewhere the whole batch is refused with
// one -32600 error and nothing in it is processed.
func (b *core) batch(ctx context.Context, msgs []jsonrpc.Message, replies []*jsonrpc.Response) {
	if v := b.version(); !batchesAllowed(v) {
		b.write(batchError(v))
		return
	}
	var mu sync.Mutex
	out := slices.Clone(replies)
	var calls sync.WaitGroup
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			b.dispatch(ctx, m) // notifications and responses
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
			b.front.emitBatch(out)
		}
	}()
}

// finish waits for the host's requests in flight, then ends the session
// and stops reconnecting.
func (b *core) finish() error {
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

// write hands one message to the front.
func (b *core) write(m jsonrpc.Message) {
	b.logMessage("to host", m)
	b.front.emit(m)
}

// logMessage logs one message at debug level (stderr, with -debug or
// MCP_FLOW_DEBUG=1).
func (b *core) logMessage(dir string, m jsonrpc.Message) {
	if !b.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	switch m := m.(type) {
	case *jsonrpc.Request:
		b.log.Debug(dir, "method", m.Method, "id", m.ID.String())
	case *jsonrpc.Response:
		b.log.Debug(dir, "response", m.ID.String(), "error", m.Error != nil)
	}
}

func (b *core) dispatch(ctx context.Context, m jsonrpc.Message) {
	b.logMessage("from host", m)
	switch m := m.(type) {
	case *jsonrpc.Response:
		b.hostWait.deliver(m)
	case *jsonrpc.Request:
		if !m.IsCall() {
			b.notification(m)
			return
		}
		if b.takeStateless(m) {
			if r := statelessRefusal(m); r != nil {
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
		b.wg.Add(1)
		cctx, release := b.track(ctx, m.ID)
		go func() {
			defer b.wg.Done()
			defer release()
			if r := b.call(ctx, cctx, m); r != nil {
				b.write(r)
			}
		}()
	}
}

func (b *core) session() *flow.Session {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sess
}

// setSession makes s the session in force (nil: none) and wakes the
// requests waiting for a change. b.mu must be held.
func (b *core) setSessionLocked(s *flow.Session) {
	b.sess = s
	close(b.changed)
	b.changed = make(chan struct{})
}

// current returns the session a request goes on: nil before initialize;
// while the front reconnects, the next session, waited for up to
// ReconnectWait (spec §10); a *ServerLostError when none comes in time, or
// at once when this front does not reconnect.
func (b *core) current(ctx context.Context) (*flow.Session, error) {
	if b.isStateless() {
		return b.statelessSession(ctx)
	}
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		s, changed, inited, closing, lostErr := b.sess, b.changed, b.initReq != nil, b.closing, b.lostErr
		b.mu.Unlock()
		if s != nil && s.Err() == nil && s.State() == flow.StateReady {
			return s, nil
		}
		switch {
		case !inited:
			return nil, nil
		case s == nil && (closing || !b.reconnects()):
			return nil, &ServerLostError{URL: b.cfg.URL, Err: lostErr}
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
			return nil, &ServerLostError{URL: b.cfg.URL, Err: lostErr, Waited: b.cfg.ReconnectWait}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// reconnects reports whether this front reconnects after losing its
// session: the stdio front does, unless ExitOnDisconnect; the HTTP front's
// sessions do not (their clients start over after a 404).
func (b *core) reconnects() bool { return b.onLost == nil && !b.cfg.ExitOnDisconnect }

// ServerLostError answers the host's requests when the MCP-Flow session
// ended other than by the host's EOF (spec §10): the requests in flight,
// and those that found no new session in time.
type ServerLostError struct {
	URL    string
	Err    error         // why the session ended (or the last reconnection failed)
	Waited time.Duration // how long the request waited for a reconnection
}

var _ error = (*ServerLostError)(nil)

func (e *ServerLostError) Error() string {
	msg := "MCP-Flow server " + e.URL + " lost"
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Waited > 0 {
		msg += fmt.Sprintf(" (no new session within %v)", e.Waited)
	}
	return msg
}

func (e *ServerLostError) Unwrap() error { return e.Err }

// watch waits for the end of s and handles it unless the host ended first.
func (b *core) watch(s *flow.Session) {
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
		b.mu.Unlock()
		if stateless { // the next request dials again: no state was lost
			b.log.Warn("MCP-Flow session lost; its requests in flight failed", "server", b.cfg.URL, "err", err)
			return
		}
		b.log.Warn("MCP-Flow session lost; its requests in flight failed, and the server's state for this host is gone "+
			"(resource subscriptions, the logging/setLevel level, requests from the server to the host, progress and execution streams)",
			"server", b.cfg.URL, "err", err)
		switch {
		case b.onLost != nil:
			b.onLost(err)
		case b.cfg.ExitOnDisconnect:
			b.lost <- &ServerLostError{URL: b.cfg.URL, Err: err}
		default:
			b.bg.Add(1)
			go b.reconnect()
		}
	}()
}

// reconnect dials the server again with the host's original initialize,
// with a backoff from ReconnectMin doubling up to ReconnectMax, until it
// succeeds or the host's input ends (spec §10). Each attempt is logged.
func (b *core) reconnect() {
	defer b.bg.Done()
	b.mu.Lock()
	req := b.initReq
	b.mu.Unlock()
	var p flow.InitializeParams
	_ = json.Unmarshal(req.Params, &p) // it was decoded once already
	delay := b.cfg.ReconnectMin
	t := time.NewTimer(delay)
	defer t.Stop()
	for attempt := 1; ; attempt++ {
		select {
		case <-t.C:
		case <-b.stop.Done():
			return
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
			b.lostErr = nil
			b.setSessionLocked(s)
			b.mu.Unlock()
			b.watch(s)
			b.log.Warn("reconnected to the MCP-Flow server; the host's initialize was sent again", "server", b.cfg.URL,
				"attempt", attempt, "serverInfo", s.InitializeResult().ServerInfo.Name)
			if v := s.InitializeResult().ProtocolVersion; v != b.version() {
				b.log.Warn("the server now answers another MCP version than the host was told", "was", b.version(), "now", v)
			}
			return
		}
		delay = min(2*delay, b.cfg.ReconnectMax)
		b.log.Warn("reconnection failed", "server", b.cfg.URL, "attempt", attempt, "err", err, "next", delay)
		b.mu.Lock()
		b.lostErr = err
		b.mu.Unlock()
		t.Reset(delay)
	}
}

func (b *core) notification(n *jsonrpc.Request) {
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
		if s := b.session(); s != nil {
			_ = s.Notify(n.Method, n.Params)
		}
	}
}

// track registers a request of the host, on the reading goroutine so that
// a notifications/cancelled read after it finds it (while it waits for a
// session, too): cctx is ctx cancelled by it; release forgets the request.
func (b *core) track(ctx context.Context, id jsonrpc.ID) (cctx context.Context, release func()) {
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

// call answers one request of the host through the MCP-Flow session; cctx
// is ctx cancelled by the host (track). nil when the host cancelled it (MCP
// sends no response then).
func (b *core) call(ctx, cctx context.Context, m *jsonrpc.Request, opts ...flow.CallOption) *jsonrpc.Response {
	for {
		s, err := b.current(cctx)
		switch {
		case cctx.Err() != nil && ctx.Err() == nil:
			return nil // the host cancelled: MCP sends no response
		case err != nil:
			return jsonrpc.NewErrorResponse(m.ID, lostError(err))
		case s == nil:
			if m.Method == protocol.MethodPing {
				return &jsonrpc.Response{ID: m.ID, Result: json.RawMessage("{}")}
			}
			return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "not initialized"))
		}
		if r, retry := b.callOn(ctx, cctx, s, m, opts...); !retry {
			return r
		}
		// The session began to shut down before the request left: it goes
		// on the next one.
	}
}

// lostError is the JSON-RPC error for a request that lost its server.
func lostError(err error) *jsonrpc.Error {
	e := jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error())
	var le *ServerLostError
	if errors.As(err, &le) {
		why := ""
		if le.Err != nil {
			why = le.Err.Error()
		}
		e.Data, _ = json.Marshal(map[string]string{"server": le.URL, "reason": why})
	}
	return e
}

// callOn answers m on session s; cctx is ctx cancelled by the host's
// notifications/cancelled. retry reports that m was not sent because s is
// shutting down.
func (b *core) callOn(ctx, cctx context.Context, s *flow.Session, m *jsonrpc.Request, opts ...flow.CallOption) (_ *jsonrpc.Response, retry bool) {
	// The params go as they came: a progress token of the host's comes
	// back in the server's notifications/progress (on the control stream: a
	// front asks for no datagrams), which reach the host through the
	// Notification hook like any other notification.
	resp, err := s.Call(cctx, m.Method, m.Params, opts...)
	if cctx.Err() != nil && ctx.Err() == nil {
		return nil, false // the host cancelled: MCP sends no response
	}
	var je *jsonrpc.Error
	var se *flow.SessionError
	switch {
	case err == flow.ErrShuttingDown && b.reconnects():
		return nil, true
	case errors.As(err, &se):
		// The session ended with the request in flight (spec §10).
		return jsonrpc.NewErrorResponse(m.ID, lostError(&ServerLostError{URL: b.cfg.URL, Err: se})), false
	case errors.As(err, &je):
		return jsonrpc.NewErrorResponse(m.ID, je), false
	case err != nil:
		return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, "MCP-Flow: "+err.Error())), false
	}
	result, err := b.inline(cctx, resp)
	if err != nil {
		if serr := s.Err(); serr != nil {
			err = &ServerLostError{URL: b.cfg.URL, Err: fmt.Errorf("%w (%v)", serr, err)}
			return jsonrpc.NewErrorResponse(m.ID, lostError(err)), false
		}
		return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error())), false
	}
	if b.isStateless() {
		result = withCacheHints(m.Method, result)
	}
	return &jsonrpc.Response{ID: m.ID, Result: result}, false
}

// initialize dials the MCP-Flow server with the host's initialize and
// answers with the server's result, minus the transport object. The request
// is kept: a reconnection sends it again (spec §10).
func (b *core) initialize(ctx context.Context, m *jsonrpc.Request) *jsonrpc.Response {
	var p flow.InitializeParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "initialize params: "+err.Error()))
	}
	s, err := b.dial(ctx, p)
	if err != nil {
		return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, "cannot reach the MCP-Flow server: "+err.Error()))
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
func (b *core) dial(ctx context.Context, p flow.InitializeParams) (*flow.Session, error) {
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
	cc.Handler = flow.HandlerFunc(b.forwardToHost)
	cc.Hooks.Notification = func(_ *flow.Session, n *jsonrpc.Request) {
		if !strings.HasPrefix(n.Method, "$/") {
			b.write(n)
		}
	}
	return flow.Dial(ctx, b.cfg.URL, cc)
}

// forwardToHost sends the server's request (sampling, roots, elicitation)
// to the host under an id of the bridge's own, and returns its answer.
func (b *core) forwardToHost(ctx context.Context, req *flow.Request) (any, error) {
	if b.isStateless() {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "a 2026-07-28 client takes no requests from the server (it asks for input with input_required results, spec §11.6)")
	}
	id := jsonrpc.StringID(fmt.Sprintf("mcp-flow-%d", b.hostID.Add(1)))
	ch, forget := b.hostWait.add(id)
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

// progressToken returns a request's _meta.progressToken (MCP progress), nil
// when it has none: the one reader of it in this package.
func progressToken(params json.RawMessage) json.RawMessage {
	var p struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.Meta.ProgressToken
}
