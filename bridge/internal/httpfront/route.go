package httpfront

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// An httpSession as its core's front: the client's messages go to the core
// (dispatch); the core's go to the SSE stream where the client waits for
// them (route), within the held-bytes caps.

var _ core.Front = (*httpSession)(nil)

// emit sends one message of the core to where the client waits for it
// (route); it never blocks.
func (s *httpSession) Emit(m jsonrpc.Message) { s.route(m, nil) }

// emitResult sends a result as any response (route), writing the splice
// once, into the event (core.EncodeResult).
func (s *httpSession) EmitResult(id jsonrpc.ID, result *mcpjson.Splice) {
	s.route(core.EncodeResult(id, result))
}

// emitBatch sends the responses to a batch one by one, each on the stream
// its request waits on.
func (s *httpSession) EmitBatch(rs []*jsonrpc.Response) {
	for _, r := range rs {
		s.route(r, nil)
	}
}

// Finished POST streams are kept for resumption within these bounds per
// session; the oldest go first.
const (
	keepFinished      = 64
	keepFinishedBytes = 32 << 20
)

// retire keeps a finished POST stream for resumption, within the session's
// bounds; the oldest finished streams go first.
func (s *httpSession) retire(st *sseStream) {
	s.mu.Lock()
	s.finished = append(s.finished, st)
	total := 0
	for _, f := range s.finished {
		total += f.bytes()
	}
	var gone []*sseStream
	for len(s.finished) > 1 && (len(s.finished) > keepFinished || total > keepFinishedBytes) {
		old := s.finished[0]
		total -= old.bytes()
		delete(s.streams, old.id)
		gone = append(gone, old)
		s.finished[0] = nil
		s.finished = s.finished[1:]
	}
	s.mu.Unlock()
	for _, old := range gone {
		old.release()
	}
}

// evict frees what the session holds only for resumption, to make room
// for new events past a held-bytes cap: the events already written out, on
// every stream (events a client has not read yet are never dropped).
func (s *httpSession) evict() {
	s.mu.Lock()
	all := make([]*sseStream, 0, len(s.streams))
	for _, st := range s.streams {
		all = append(all, st)
	}
	s.mu.Unlock()
	for _, st := range all {
		st.dropDelivered()
	}
}

// register adds a call of the client in flight: its answer goes to post
// (nil: the standalone stream). s.mu must be held.
func (s *httpSession) registerLocked(id string, c *httpCall, params json.RawMessage) {
	if tok := mcpjson.ProgressToken(params); tok != nil {
		c.token = string(tok)
		s.byToken[c.token] = c
	}
	s.calls[id] = c
	s.front.calls.Add(1)
	if c.post != nil {
		c.post.pending++
	}
}

// settleLocked forgets the call id (answered or cancelled). s.mu must be
// held. Its POST stream counts it as answered only once its answer is in
// the stream's log (answered): the stream never ends before an answer.
func (s *httpSession) settleLocked(id string) *httpCall {
	c := s.calls[id]
	if c == nil {
		return nil
	}
	delete(s.calls, id)
	if c.token != "" && s.byToken[c.token] == c {
		delete(s.byToken, c.token)
	}
	if c.hold != nil {
		c.hold.settledLocked()
	}
	return c
}

// answered counts one request of the POST stream p as answered, and ends
// the stream when it was the last.
func (s *httpSession) answered(p *postStream) {
	if p == nil {
		return
	}
	s.mu.Lock()
	p.pending--
	last := p.pending == 0
	s.mu.Unlock()
	if last {
		s.complete(p)
	}
}

// complete ends a POST stream whose requests are all answered.
func (s *httpSession) complete(p *postStream) {
	p.finish()
	s.retire(p.sseStream)
	p.done()
}

// cancelled ends the wait for a request the client cancelled: MCP sends no
// response to it, so its POST stream ends once its other requests are
// answered (at once when it was alone).
func (s *httpSession) cancelled(params json.RawMessage) {
	var p flow.CancelParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s.mu.Lock()
	c := s.settleLocked(p.RequestID.Raw())
	s.mu.Unlock()
	if c == nil {
		return
	}
	s.answered(c.post)
	s.front.callsDone()
}

// route sends one message of the core to where the client waits for it:
// a response on its request's stream, a progress notification on the
// stream of the request it is about, a server request on the stream of a
// request in flight, anything else on the standalone stream. It never
// blocks: the stream's log holds the event for its followers. e is m
// encoded, or nil to encode it here.
func (s *httpSession) route(m jsonrpc.Message, e []byte) {
	var post *postStream
	var response bool
	s.mu.Lock()
	switch m := m.(type) {
	case *jsonrpc.Response:
		c := s.settleLocked(m.ID.Raw())
		if c == nil {
			s.mu.Unlock()
			// A response to a request cancelled or no longer waited for:
			// a response never goes on the standalone stream.
			s.front.log.Debug("a response no request waits for", "id", m.ID.String())
			return
		}
		defer s.front.callsDone()
		if c.init != nil {
			s.mu.Unlock()
			c.init <- m // capacity 1, one answer: never blocks
			return
		}
		post, response = c.post, true
	case *jsonrpc.Request:
		if m.Method == protocol.MethodProgress {
			var p flow.Progress // its params (spec §6.2)
			_ = json.Unmarshal(m.Params, &p)
			if c := s.byToken[string(p.ProgressToken)]; c != nil {
				post = c.post
			}
		} else if m.IsCall() {
			// A server request (sampling, elicitation) most likely serves a
			// request in flight: send it on that request's stream, where
			// the client is listening for sure (MCP 2025-11-25 transports).
			for _, c := range s.calls {
				if c.post != nil {
					post = c.post
					break
				}
			}
		}
	}
	st := s.standalone
	if post != nil {
		st = post.sseStream
	}
	s.mu.Unlock()
	s.add(st, m, e)
	if response {
		s.answered(post)
	}
}

// add puts one message on a stream within the held-bytes caps: past them,
// once what is held only for resumption is freed (the session's, then past
// MaxHeld every session's), a response becomes a -32603 error naming the
// cap and anything else is dropped. e is m encoded, or nil to encode it
// here.
func (s *httpSession) add(st *sseStream, m jsonrpc.Message, e []byte) {
	if e == nil {
		e = jsonrpc.AppendJSON(nil, m)
	}
	if !s.budget.take(len(e)) {
		s.evict()
		if !s.budget.take(len(e)) {
			// Past MaxHeld, what every session keeps for resumption only
			// gives way too.
			for _, o := range s.front.all() {
				o.evict()
			}
			if !s.budget.take(len(e)) {
				s.refused(st, m, len(e))
				return
			}
		}
	}
	st.appendEvent(e)
}

func (s *httpSession) refused(st *sseStream, m jsonrpc.Message, n int) {
	r, ok := m.(*jsonrpc.Response)
	if !ok {
		s.front.log.Warn("SSE event refused", "why", heldWhy(s, n))
		return
	}
	e := heldRefusal(s, r, n)
	s.budget.force(len(e))
	st.appendEvent(e)
}

// heldRefusal is the -32603 error that stands for a response of n bytes
// refused by the held-bytes caps (both eras), encoded; it is logged.
func heldRefusal(s *httpSession, r *jsonrpc.Response, n int) []byte {
	why := heldWhy(s, n)
	s.front.log.Warn("answer refused", "why", why)
	return jsonrpc.AppendJSON(nil, jsonrpc.NewErrorResponse(r.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, why)))
}

// heldWhy says which held-bytes cap refused a message of n bytes.
func heldWhy(s *httpSession, n int) string {
	h := s.front
	return fmt.Sprintf("the HTTP front holds %d bytes of events and answers for this client (cap %d, MaxSessionHeld) and %d for all (cap %d, MaxHeld): "+
		"a %d-byte message was refused; read the streams faster", s.budget.held(), h.cfg.MaxSessionHeld, h.held.held(), h.cfg.MaxHeld, n)
}

// dispatch passes the client's messages to the core; a
// notifications/cancelled also ends the wait for its request.
func (s *httpSession) dispatch(r *http.Request, msgs []jsonrpc.Message) {
	for _, m := range msgs {
		s.core.Dispatch(context.WithoutCancel(r.Context()), m) // a disconnect is not a cancellation
		if n, ok := m.(*jsonrpc.Request); ok && !n.IsCall() && n.Method == protocol.MethodCancelled {
			s.cancelled(n.Params)
		}
	}
}
