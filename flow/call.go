package flow

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// call is the session's record of one of our requests, from sending until
// its response has arrived and the execution streams it names are settled.
type call struct {
	id         jsonrpc.ID
	num        uint32 // the id as a stream/datagram header names it
	method     string
	resp       chan *jsonrpc.Response
	onProgress func(Progress)
	onNotify   func(*jsonrpc.Request) // WithNotifications
	// progressMu serialises onProgress; lastProgress is the newest value it
	// was given (deliverProgress).
	progressMu   sync.Mutex
	progressed   bool
	lastProgress float64

	// Execution streams (client side), under Session.mu.
	streams  map[uint32]*inStream // by tag, arrived or awaited
	answered bool
	refs     map[uint32]bool // tags the result names
}

// CallOption adjusts one Call.
type CallOption func(*call)

// WithProgress asks for progress (spec §6.2): the request carries
// _meta.progressToken and f receives each update, whether it came as a
// datagram or on the control stream, in increasing order of its value (an
// update not above the last one given to f is dropped). f is not called
// concurrently; it runs on a reading goroutine and must not block.
func WithProgress(f func(Progress)) CallOption { return func(c *call) { c.onProgress = f } }

// Response is the successful answer to Call.
type Response struct {
	s      *Session
	c      *call
	ID     jsonrpc.ID
	Result json.RawMessage
	// Refs lists the ref/stream content blocks of the result, in order,
	// each with its span in Result (Start, End): a bridge replaces them
	// there without reading the result again (spec §10).
	Refs []StreamRef
}

// Call sends a request and waits for its response. A JSON-RPC error answer
// is returned as a *jsonrpc.Error (request scope); a session failure as a
// *SessionError. During a $/shutdown drain and after a clean one it fails
// at once with ErrShuttingDown (spec §7.2). When ctx ends first, Call sends
// $/cancel (spec §7.1) and returns ctx's error.
//
// Request ids are 32-bit integers, so that stream and datagram headers can
// name them (spec §3.2).
func (s *Session) Call(ctx context.Context, method string, params any, opts ...CallOption) (*Response, error) {
	if err := s.Err(); err != nil {
		if se, ok := err.(*SessionError); ok && se.clean() {
			// After a clean $/shutdown as during it (spec §7.2).
			return nil, ErrShuttingDown
		}
		return nil, err
	}
	st := s.State()
	if st < StateReady && method != protocol.MethodInitialize && method != protocol.MethodPing {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "session is not initialized")
	}
	num := s.nextID.Add(1)
	if num == 0 { // 0 is "session-wide" in datagram headers
		num = s.nextID.Add(1)
	}
	c := &call{id: jsonrpc.Uint32ID(num), num: num, method: method, resp: make(chan *jsonrpc.Response, 1)}
	for _, o := range opts {
		o(c)
	}
	var meta []mcpjson.Edit
	if c.onProgress != nil {
		meta = append(meta, mcpjson.Set(protocol.MetaProgressToken, []byte(c.id.Raw())))
	}
	if v := s.statelessVersion; v != "" && !strings.HasPrefix(method, protocol.MethodPrefix) {
		meta = append(meta, statelessMeta(v, s.statelessCaps)...)
	}
	raw, err := marshalParams(params, meta)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.dr.refusing() && method != protocol.MethodPing {
		s.mu.Unlock()
		return nil, ErrShuttingDown
	}
	if s.calls == nil {
		s.calls, s.streamCalls = map[jsonrpc.ID]*call{}, map[uint32]*call{}
	}
	s.calls[c.id] = c
	s.streamCalls[num] = c
	s.mu.Unlock()

	sent := s.now()
	if err := s.send(&jsonrpc.Request{ID: c.id, Method: method, Params: raw}); err != nil {
		s.forget(c)
		if se := s.Err(); se != nil {
			return nil, se
		}
		return nil, err
	}
	// done emits the call's EventRequest; every way out below calls it once.
	done := func(outcome string, code jsonrpc.Code) {
		s.observe(Event{Kind: EventRequest, Method: method, ID: c.id.String(), Outcome: outcome, Code: int64(code), Duration: since(sent)})
	}
	answered := func(resp *jsonrpc.Response) (*Response, error) {
		if resp.Error != nil {
			s.settleCall(c, nil)
			done("error", resp.Error.Code)
			return nil, resp.Error
		}
		r := &Response{s: s, c: c, ID: resp.ID, Result: resp.Result}
		if mcpjson.MentionsRef(resp.Result) {
			r.Refs, _ = mcpjson.Refs(resp.Result) // a result that does not read names no stream
		}
		s.settleCall(c, r.Refs)
		done("ok", 0)
		return r, nil
	}
	select {
	case resp := <-c.resp:
		return answered(resp)
	case <-ctx.Done():
		// Keep the call registered: the peer answers $/cancel with -32800,
		// and that answer settles it.
		if s.Notify(protocol.MethodCancel, CancelParams{RequestID: c.id, Reason: context.Cause(ctx).Error()}) == nil {
			s.observe(Event{Kind: EventCancel, Method: method, ID: c.id.String()})
		}
		done("cancelled", jsonrpc.CodeRequestCancelled)
		go func() {
			select {
			case <-c.resp:
				s.settleCall(c, nil)
			case <-s.done:
			}
		}()
		return nil, ctx.Err()
	case <-s.done:
		select {
		case resp := <-c.resp: // answered before the session ended
			return answered(resp)
		default:
		}
		done("cancelled", jsonrpc.CodeRequestCancelled)
		return nil, s.Err()
	}
}

// marshalParams marshals params (json.RawMessage params go as they are)
// and applies meta to their _meta: _meta.progressToken when the call asks
// for progress (spec §6.2), the 2026-07-28 members (spec §11.5). Members
// keep their order and bytes (mcpjson.EditMeta).
func marshalParams(params any, meta []mcpjson.Edit) (json.RawMessage, error) {
	if params == nil && len(meta) == 0 {
		return nil, nil
	}
	req, err := jsonrpc.NewRequest(jsonrpc.ID{}, "", params)
	if err != nil {
		return nil, err
	}
	if len(meta) == 0 {
		return req.Params, nil
	}
	raw, err := mcpjson.EditMeta(req.Params, meta...)
	if err != nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params must be an object to carry _meta (progress, 2026-07-28 requests): "+err.Error())
	}
	return raw, nil
}

// deliver hands a response to the call waiting for it.
func (s *Session) deliver(r *jsonrpc.Response) {
	if r.ID.IsNull() {
		// A protocol error about something we sent (spec §8).
		s.log.Warn("peer reported a protocol error", "code", int64(r.Error.Code), "message", r.Error.Message)
		if s.hooks.ProtocolError != nil {
			s.hooks.ProtocolError(s, r.Error)
		}
		return
	}
	s.mu.Lock()
	c := s.calls[r.ID]
	delete(s.calls, r.ID)
	s.mu.Unlock()
	if c == nil {
		s.log.Debug("response to no request in flight", "id", r.ID.String())
		return
	}
	c.resp <- r
}

// forget drops a call that was never sent.
func (s *Session) forget(c *call) {
	s.mu.Lock()
	delete(s.calls, c.id)
	delete(s.streamCalls, c.num)
	s.mu.Unlock()
	s.maybeFinish()
}

// settleCall records the stream tags the result names. Streams that arrived
// for the request but are not named are refused (-32001); the call is
// forgotten once every named stream is settled.
func (s *Session) settleCall(c *call, refs []StreamRef) {
	s.mu.Lock()
	c.answered = true
	if len(refs) > 0 {
		c.refs = make(map[uint32]bool, len(refs))
		for _, r := range refs {
			c.refs[r.StreamTag] = true
		}
	}
	var refuse []*inStream
	for tag, st := range c.streams {
		if !c.refs[tag] {
			refuse = append(refuse, st)
			delete(c.streams, tag)
		}
	}
	s.mu.Unlock()
	for _, st := range refuse {
		st.refuse(StreamCode(0x7d01)) // 32001: a stream no ref/stream names
	}
	s.maybeForgetCall(c)
}

// maybeForgetCall forgets c once it is answered and every stream it names
// is settled.
func (s *Session) maybeForgetCall(c *call) {
	s.mu.Lock()
	done := c.answered && s.streamCalls[c.num] == c
	for tag := range c.refs {
		if st := c.streams[tag]; st == nil || !st.settled {
			done = false
		}
	}
	if done {
		delete(s.streamCalls, c.num)
	}
	s.mu.Unlock()
	if done {
		s.maybeFinish()
	}
}

// Close releases the response's execution streams that were not read: each
// is refused and settled. It is safe to call after reading them all.
func (r *Response) Close() error {
	for _, ref := range r.Refs {
		st := r.s.awaitedStream(r.c, ref.StreamTag)
		st.refuse(StreamCode(jsonrpc.CodeRequestCancelled))
	}
	return nil
}
