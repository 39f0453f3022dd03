package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
)

// Request is a request from the peer, as a Handler sees it. Its methods are
// safe for concurrent use, including after the handler has returned (a
// goroutine feeding an execution stream may outlive it).
type Request struct {
	*jsonrpc.Request
	Session *Session
	in      *inbound
}

// inbound is the session's record of one request from the peer, from its
// arrival until its response is sent and its execution streams are closed.
type inbound struct {
	id        jsonrpc.ID
	method    string
	arrived   time.Time // for EventRequest's Duration (zero when nothing observes: Session.now)
	cancel    context.CancelCauseFunc
	answer    func(*jsonrpc.Response)
	responded bool // under Session.mu
	cancelled bool
	streams   map[uint32]*StreamWriter
	nextTag   uint32
	token     json.RawMessage // _meta.progressToken, if any
	progress  *progressSlot   // under Session.pg.mu; nil until progress goes as datagrams
}

func (s *Session) handleCall(m *jsonrpc.Request, answer func(*jsonrpc.Response)) {
	fail := func(code jsonrpc.Code, msg string) {
		answer(jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(code, msg)))
	}
	st := s.State()
	switch {
	case m.Method == protocol.MethodPing:
		answer(&jsonrpc.Response{ID: m.ID, Result: json.RawMessage("{}")})
		return
	case m.Method == protocol.MethodHello:
		if s.server && st == StateControlOpened && !s.hello.Load() && !s.faults().GuideOnly {
			s.handleHello(m, answer)
			return
		}
		fail(jsonrpc.CodeInvalidRequest, "$/hello must be the first frame of the session (spec §11.4)")
		return
	case s.server && (s.srv.cfg.OnInitialize == nil || s.srv.cfg.ServeStateless) && !s.faults().GuideOnly && (s.stateless.Load() || (st == StateControlOpened && isStateless(m))):
		// A bridge (OnInitialize set) takes 2026 requests only when it
		// says it can (ServeStateless, spec §11.6).
		if !s.admitStateless(m, answer) {
			return
		}
		answer = s.withResultType(answer)
	case m.Method == protocol.MethodInitialize:
		if s.server && st == StateControlOpened {
			s.handleInitialize(m, func(r *jsonrpc.Response) {
				if r.Error != nil {
					s.refusedInit.Store(true) // a peer that now leaves was refused (spec §8.2)
				}
				answer(r)
			})
			return
		}
		fail(jsonrpc.CodeInvalidRequest, "initialize was already done on this session (spec §2)")
		return
	case st < StateReady:
		fail(jsonrpc.CodeInvalidRequest, "session is not initialized: only initialize and ping may come first (spec §2)")
		return
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	in := &inbound{id: m.ID, method: m.Method, arrived: s.now(), cancel: cancel, answer: answer, token: mcpjson.ProgressToken(m.Params)}
	// refuse answers a request the session will not hand to the Handler.
	refuse := func(code jsonrpc.Code, msg string) {
		cancel(nil)
		fail(code, msg)
		s.observe(Event{Kind: EventRequest, Inbound: true, Method: m.Method, ID: m.ID.String(), Outcome: "error", Code: int64(code), Duration: since(in.arrived)})
	}
	s.mu.Lock()
	switch {
	case s.dr.refusing():
		s.mu.Unlock()
		refuse(jsonrpc.CodeShuttingDown, "session is shutting down; no new requests (spec §7.2)")
		return
	case s.unanswered >= s.lim.MaxRequestsInFlight:
		s.mu.Unlock()
		refuse(jsonrpc.CodeTooManyRequests, fmt.Sprintf("more than %d requests in flight (spec §8)", s.lim.MaxRequestsInFlight))
		return
	case s.handling[m.ID] != nil:
		s.mu.Unlock()
		refuse(jsonrpc.CodeInvalidRequest, "a request with id "+m.ID.String()+" is already in flight")
		return
	}
	if s.handling == nil {
		s.handling = map[jsonrpc.ID]*inbound{}
	}
	s.handling[m.ID] = in
	s.unanswered++
	s.mu.Unlock()
	req := &Request{Request: m, Session: s, in: in}
	go s.run(ctx, req)
}

// run calls the handler and answers, unless $/cancel answered first.
func (s *Session) run(ctx context.Context, req *Request) {
	var (
		result any
		err    error
	)
	func() {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("handler panicked", "method", req.Method, "panic", p)
				err = jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error")
			}
		}()
		if s.servesListen(req) {
			result, err = s.listen(ctx, req)
			return
		}
		if s.servesSubscribe(req) {
			result, err = s.subscribe(ctx, req)
			return
		}
		result, err = s.handler.HandleRequest(ctx, req)
	}()
	var resp *jsonrpc.Response
	if err != nil {
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			je = jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error())
		}
		resp = jsonrpc.NewErrorResponse(req.ID, je)
	} else if raw, ok := result.(json.RawMessage); ok && len(raw) > 0 {
		resp = &jsonrpc.Response{ID: req.ID, Result: raw}
	} else if resp, err = jsonrpc.NewResult(req.ID, result); err != nil {
		resp = jsonrpc.NewErrorResponse(req.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, "result does not marshal: "+err.Error()))
	}
	s.respond(req.in, resp)
}

// respond sends the response of in unless one was sent already.
func (s *Session) respond(in *inbound, resp *jsonrpc.Response) {
	s.mu.Lock()
	if in.responded {
		s.mu.Unlock()
		return
	}
	in.responded = true
	s.unanswered--
	byPeer := in.cancelled
	s.mu.Unlock()
	s.finishProgress(in, true)
	// A session that has ended cut the request off: its answer goes nowhere.
	cancelled := byPeer || s.ctx.Err() != nil
	in.answer(resp)
	outcome, code := "ok", jsonrpc.Code(0)
	if resp.Error != nil {
		outcome, code = "error", resp.Error.Code
	}
	if cancelled {
		outcome = "cancelled"
		if resp.Error == nil || !byPeer {
			code = jsonrpc.CodeRequestCancelled
		}
	}
	s.requestDone(in, outcome, code)
	s.settleInbound(in)
}

// requestDone emits EventRequest for the peer's request in, answered (or,
// after notifications/cancelled, ended) now.
func (s *Session) requestDone(in *inbound, outcome string, code jsonrpc.Code) {
	s.observe(Event{Kind: EventRequest, Inbound: true, Method: in.method, ID: in.id.String(), Outcome: outcome, Code: int64(code), Duration: since(in.arrived)})
}

// settleInbound forgets in once it is answered and its streams are closed.
func (s *Session) settleInbound(in *inbound) {
	s.mu.Lock()
	done := in.responded && len(in.streams) == 0 && s.handling[in.id] == in
	if done {
		delete(s.handling, in.id)
	}
	s.mu.Unlock()
	if done {
		in.cancel(nil)
		s.maybeFinish()
	}
}

// cancelInbound handles $/cancel and notifications/cancelled (spec §7.1):
// cancel the handler's context, reset its execution streams with 32800 and,
// for $/cancel, answer -32800. A request already finished is ignored.
func (s *Session) cancelInbound(id jsonrpc.ID, reason string, answer bool) {
	s.mu.Lock()
	in := s.handling[id]
	if in == nil || in.cancelled {
		s.mu.Unlock()
		return
	}
	in.cancelled = true
	// MCP: no response after notifications/cancelled. The request counts as
	// answered before its handler's context is cancelled: a handler that
	// returns at once must find it so, or its error goes out as a response
	// (seen under load in TestObserveRawPeer: -32800 for the silenced id).
	silenced := !answer && !in.responded
	if silenced {
		in.responded = true
		s.unanswered--
	}
	streams := make([]*StreamWriter, 0, len(in.streams))
	for _, w := range in.streams {
		streams = append(streams, w)
	}
	s.mu.Unlock()
	s.observe(Event{Kind: EventCancel, Inbound: true, Method: in.method, ID: id.String()})
	if reason == "" {
		reason = "cancelled by the peer"
	}
	in.cancel(jsonrpc.NewError(jsonrpc.CodeRequestCancelled, reason))
	for _, w := range streams {
		w.reset(jsonrpc.CodeRequestCancelled, "", false)
	}
	if answer {
		code := jsonrpc.CodeRequestCancelled
		if s.faults().CancelCode32000 {
			code = jsonrpc.CodeStreamLimitExceeded
		}
		s.respond(in, jsonrpc.NewErrorResponse(id, jsonrpc.NewError(code, "Request cancelled: "+reason)))
	} else {
		s.finishProgress(in, false)
		if silenced {
			s.requestDone(in, "cancelled", jsonrpc.CodeRequestCancelled)
		}
		s.settleInbound(in)
	}
}

// Progress reports progress on this request (MCP progress; spec §6.2). When
// the session has datagrams and the request id fits a datagram header, the
// update is queued for the session's progress sender and Progress returns at
// once: an update that has not left when a newer one comes is replaced
// (superseded), and the newest goes on the control stream before the result
// if it may not have arrived. Otherwise it goes as notifications/progress on
// the control stream. Without a progressToken in the request, MCP forbids
// progress, and after the response there is nothing to report on: Progress
// then does nothing.
func (r *Request) Progress(progress, total float64, message string) error {
	return r.progress(&Progress{Progress: progress, Total: total, Message: message})
}

// bytesUnit is the _meta of progress that counts stream bytes (spec §6.3).
var bytesUnit, _ = json.Marshal(map[string]string{protocol.MetaProgressUnit: protocol.ProgressUnitBytes})

// ProgressBytes tells the client, as progress, the size of this request's
// execution streams: total bytes in all, of which done are written (spec
// §6.3). The ref/stream block of 0.1 has no size member; with this one, a
// client can show how much of a transfer is left and when it will end.
// Progress's rules hold (only for a request with a progressToken, never
// after the response, never backwards), so a tool calls it before it
// returns, typically once with done 0, and before any other progress.
func (r *Request) ProgressBytes(done, total int64) error {
	return r.progress(&Progress{Progress: float64(done), Total: float64(total),
		Message: fmt.Sprintf("%d bytes on execution streams", total), Meta: bytesUnit})
}

func (r *Request) progress(p *Progress) error {
	if len(r.in.token) == 0 {
		return nil
	}
	s := r.Session
	s.mu.Lock()
	responded := r.in.responded
	s.mu.Unlock()
	if responded {
		return nil
	}
	p.ProgressToken = r.in.token
	if id, ok := r.ID.Uint32(); ok && s.handshake().datagrams {
		s.queueProgress(r.in, id, p)
		return nil
	}
	if err := s.Notify(protocol.MethodProgress, p); err != nil {
		return err
	}
	s.pg.control.Add(1)
	return nil
}

// Context-free accessors.

// Cancelled reports whether the peer cancelled this request.
func (r *Request) Cancelled() bool {
	r.Session.mu.Lock()
	defer r.Session.mu.Unlock()
	return r.in.cancelled
}

// Log sends an MCP log message about this request (notifications/message
// params: level, logger, data) as a log datagram when the session has
// datagrams, else on the control stream (spec §6).
func (r *Request) Log(level, logger string, data any) error {
	p := map[string]any{"level": level, "data": data}
	if logger != "" {
		p["logger"] = logger
	}
	if id, ok := r.ID.Uint32(); ok && r.Session.handshake().datagrams {
		if err := r.Session.sendDatagramValue(wire.ChannelLog, id, p); err == nil {
			return nil
		}
	}
	return r.Session.Notify(protocol.MethodLogMessage, p)
}

// Audio sends a chunk of audio about this request as an audio datagram
// (spec §6). Audio has no control-stream fallback: without datagrams it
// fails with -32004.
func (r *Request) Audio(chunk any) error {
	id, ok := r.ID.Uint32()
	if !ok {
		return jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "request id is not a 32-bit integer; datagrams need one (spec §3.3)")
	}
	return r.Session.SendDatagram(wire.ChannelAudio, id, chunk)
}
