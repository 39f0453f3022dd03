package flow

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/quic-go/webtransport-go"
)

// inStream is one execution stream of one of our calls: arrived, or named by
// the result and awaited. Fields other than arrived are under Session.mu.
type inStream struct {
	s       *Session
	c       *call
	tag     uint32
	arrived chan struct{} // closed when rs is set
	rs      WTReceiveStream
	reason  string        // from $/streamError
	noted   chan struct{} // closed when $/streamError has come
	settled bool
	read    atomic.Int64 // payload bytes read (EventStream)
	ev      streamEvents
}

// streamErrorWait bounds how long a reader whose stream was reset with 32603
// waits for the $/streamError that gives the reason (spec §5.4): it travels
// on the control stream and may trail the reset by a moment, or never come
// from a peer that does not send it.
const streamErrorWait = 100 * time.Millisecond

func newInStream(s *Session, c *call, tag uint32) *inStream {
	return &inStream{s: s, c: c, tag: tag, arrived: make(chan struct{}), noted: make(chan struct{})}
}

// note records the reason of a $/streamError. Under Session.mu.
func (st *inStream) note(reason string) {
	st.reason = reason
	select {
	case <-st.noted:
	default:
		close(st.noted)
	}
}

// acceptStreams takes the execution streams the peer opens (spec §5).
func (s *Session) acceptStreams() {
	for {
		rs, err := s.wt.AcceptUniStream(s.ctx)
		if err != nil {
			return
		}
		go s.takeStream(rs)
	}
}

// takeStream reads a stream's header and hands it to the call it names. A
// header that names no request of ours in flight is an injection (spec
// §5.3): the stream is refused with 32002 and the peer told with -32002;
// the session carries on.
func (s *Session) takeStream(rs WTReceiveStream) {
	_ = rs.SetReadDeadline(time.Now().Add(s.lim.StreamWait))
	h, err := wire.ReadStreamHeader(rs)
	_ = rs.SetReadDeadline(time.Time{})
	if err != nil {
		rs.CancelRead(StreamCode(jsonrpc.CodeInvalidRequest))
		return
	}
	s.mu.Lock()
	c := s.streamCalls[h.RequestID]
	if s.server {
		c = nil // clients open no execution streams in MCP-Flow 0.1
		if s.faults().NoInjectionCheck {
			s.mu.Unlock()
			_, _ = io.Copy(io.Discard, rs)
			return
		}
	}
	var st *inStream
	if c != nil {
		st = c.streams[h.StreamTag]
		switch {
		case st != nil && st.rs != nil: // a second stream with the same tag
			c = nil
		case st == nil && c.answered && !c.refs[h.StreamTag]:
			c = nil // the result named no such stream
		case st == nil:
			st = newInStream(s, c, h.StreamTag)
			if c.streams == nil {
				c.streams = map[uint32]*inStream{}
			}
			c.streams[h.StreamTag] = st
		}
	}
	opened, tracked := false, false
	if c != nil {
		st.rs = rs
		close(st.arrived)
		if !st.settled { // ($/streamError may have settled it)
			opened, tracked = true, s.trackStream(st)
		}
	}
	s.mu.Unlock()
	if opened {
		st.ev.open(s, st.openEvent)
		if !tracked { // the session ended while its header came
			st.endAtClose()
		}
	}
	if c == nil {
		rs.CancelRead(StreamCode(jsonrpc.CodeStreamInjection))
		// Each is refused; the peer is told, and the log written, at most
		// once a second (a stream costs the peer a few bytes).
		if ok, held := s.reports.allow(); ok {
			s.log.Warn("refused an execution stream naming no request in flight", "request", h.RequestID, "tag", h.StreamTag, "heldBack", held)
			s.replyError(jsonrpc.NullID, jsonrpc.CodeStreamInjection, "stream injection: execution stream header names request "+
				itoa(h.RequestID)+" tag "+itoa(h.StreamTag)+", which is not in flight (spec §5.3)"+heldNote(held))
		}
	}
}

func itoa(n uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// awaitedStream returns the record of stream tag of c, creating it.
func (s *Session) awaitedStream(c *call, tag uint32) *inStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := c.streams[tag]
	if st == nil {
		st = newInStream(s, c, tag)
		if c.streams == nil {
			c.streams = map[uint32]*inStream{}
		}
		c.streams[tag] = st
	}
	return st
}

// refuse stops reading st (if it arrived) and settles it.
func (st *inStream) refuse(code webtransport.StreamErrorCode) {
	st.s.mu.Lock()
	rs := st.rs
	was := st.settled
	st.settled = true
	delete(st.s.live, st)
	st.s.mu.Unlock()
	if rs != nil && !was {
		rs.CancelRead(code)
		st.ended("reset", -jsonrpc.Code(code)) // our refusal ends it, with the code we sent
	}
	if !was {
		st.s.maybeForgetCall(st.c)
	}
}

// settle records that the stream was read to its end (outcome "ok") or
// failed ("reset", with the JSON-RPC code of its reset, spec §5.4).
func (st *inStream) settle(outcome string, code jsonrpc.Code) {
	st.s.mu.Lock()
	was := st.settled
	st.settled = true
	delete(st.s.live, st)
	st.s.mu.Unlock()
	if !was {
		st.ended(outcome, code)
		st.s.maybeForgetCall(st.c)
	}
}

// ended emits the EventStream of a stream that arrived, once it is settled,
// before the call may be forgotten (and a drain end); nothing, when the
// session's end has emitted it (endAtClose).
func (st *inStream) ended(outcome string, code jsonrpc.Code) {
	st.ev.end(st.s, st.openEvent, func() Event {
		return Event{Kind: EventStream, Inbound: true, Method: st.c.method, ID: st.c.id.String(), Tag: st.tag,
			Bytes: st.read.Load(), Outcome: outcome, Code: int64(code)}
	})
}

// openEvent is the stream's EventStreamOpen.
func (st *inStream) openEvent() Event {
	return Event{Kind: EventStreamOpen, Inbound: true, Method: st.c.method, ID: st.c.id.String(), Tag: st.tag}
}

// endAtClose emits the EventStream of a stream the session's end cut off
// before it was read to its end or refused (which then emit none).
func (st *inStream) endAtClose() { st.ended("reset", jsonrpc.CodeRequestCancelled) }

// failed settles a stream whose $/streamError came before its header
// (Response.Stream): it ended, reset with -32603 (spec §5.4), whether or
// not its header ever comes; if it has come, it is refused.
func (st *inStream) failed() {
	st.s.mu.Lock()
	rs, was := st.rs, st.settled
	st.settled = true
	delete(st.s.live, st)
	st.s.mu.Unlock()
	if was {
		return
	}
	if rs != nil {
		rs.CancelRead(StreamCode(jsonrpc.CodeRequestCancelled))
	}
	st.ended("reset", jsonrpc.CodeInternalError)
	st.s.maybeForgetCall(st.c)
}

// noteStreamError records the reason of a $/streamError for the reader. A
// stream that has arrived and is still being read is failed at once (its
// read cancelled with 32603): the writer said it failed, so no more of it
// can make it whole, and a peer that cannot reset its streams (Deno 2.9's
// WebTransport server, js/src/server.js) leaves it open; its reader waited
// for a reset that never came (`mcp-flow call fail_midstream` hung).
func (s *Session) noteStreamError(p StreamErrorParams) {
	var open WTReceiveStream
	defer func() {
		if open != nil {
			open.CancelRead(StreamCode(jsonrpc.CodeInternalError))
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.streamCalls[p.RequestID]; c != nil {
		if st := c.streams[p.StreamTag]; st != nil {
			st.note(p.Error)
			if st.rs != nil && !st.settled {
				open = st.rs
			}
			return
		}
		st := newInStream(s, c, p.StreamTag)
		st.note(p.Error)
		if c.streams == nil {
			c.streams = map[uint32]*inStream{}
		}
		c.streams[p.StreamTag] = st
	}
}

// StreamReader reads one execution stream's payload. Read returns io.EOF
// only after the whole payload: a stream that was reset or cut off returns a
// *StreamError instead (spec §5.4). Not safe for concurrent use.
type StreamReader struct {
	st  *inStream
	ref StreamRef
	err error
}

// Stream waits for the execution stream that the result's ref/stream with
// this tag names and returns its reader. A tag the result does not name, or
// a stream that has not arrived within Limits.StreamWait, is -32001 (spec
// §5.3). A $/streamError for the stream ends the wait at once with a
// *StreamError (spec §5.4): a stream reset before its header arrived names
// no request, and only its $/streamError tells the client that it failed.
func (r *Response) Stream(ctx context.Context, tag uint32) (*StreamReader, error) {
	var ref *StreamRef
	for i := range r.Refs {
		if r.Refs[i].StreamTag == tag {
			ref = &r.Refs[i]
		}
	}
	if ref == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidStreamRef, "the result names no ref/stream with tag "+itoa(tag))
	}
	st := r.s.awaitedStream(r.c, tag)
	t := time.NewTimer(r.s.lim.StreamWait)
	defer t.Stop()
	select {
	case <-st.arrived:
		return &StreamReader{st: st, ref: *ref}, nil
	case <-st.noted:
		select {
		case <-st.arrived: // its reader gets the bytes before the failure
			return &StreamReader{st: st, ref: *ref}, nil
		default:
		}
		st.failed()
		r.s.mu.Lock()
		reason := st.reason
		r.s.mu.Unlock()
		return nil, &StreamError{RequestID: r.c.num, StreamTag: tag, Code: jsonrpc.CodeInternalError, Reason: reason, Err: errFailedBeforeHeader}
	case <-t.C:
		st.refuse(StreamCode(jsonrpc.CodeInvalidStreamRef))
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidStreamRef, "no execution stream arrived for ref/stream tag "+itoa(tag)+" of request "+r.ID.String()+" (spec §5.3)")
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-r.s.done:
		return nil, r.s.Err()
	}
}

// errFailedBeforeHeader is the cause of a *StreamError for a stream whose
// $/streamError came and whose header did not.
var errFailedBeforeHeader = errors.New("flow: the server reported the stream failed ($/streamError) before its header arrived")

// Ref returns the content block that named the stream.
func (sr *StreamReader) Ref() StreamRef { return sr.ref }

// Read reads payload bytes.
func (sr *StreamReader) Read(p []byte) (int, error) {
	if sr.err != nil {
		return 0, sr.err
	}
	n, err := sr.st.rs.Read(p)
	sr.st.read.Add(int64(n))
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		sr.err = io.EOF
		sr.st.settle("ok", 0)
	default:
		se := sr.streamError(err)
		sr.err = se
		sr.st.settle("reset", se.Code)
		err = sr.err
	}
	return n, err
}

func (sr *StreamReader) streamError(err error) *StreamError {
	e := &StreamError{RequestID: sr.st.c.num, StreamTag: sr.st.tag, Code: jsonrpc.CodeInternalError, Err: err}
	var we *webtransport.StreamError
	if errors.As(err, &we) {
		e.Code = -jsonrpc.Code(we.ErrorCode)
	}
	if se := sr.st.s.Err(); se != nil && !errors.As(err, &we) {
		e.Err = se
	}
	if e.Code == jsonrpc.CodeInternalError {
		// A failed writer's $/streamError may trail the reset.
		t := time.NewTimer(streamErrorWait)
		select {
		case <-sr.st.noted:
		case <-t.C:
		case <-sr.st.s.done:
		}
		t.Stop()
	}
	sr.st.s.mu.Lock()
	e.Reason = sr.st.reason
	sr.st.s.mu.Unlock()
	return e
}

// Close stops reading; a stream not read to its end is refused.
func (sr *StreamReader) Close() error {
	if sr.err == nil {
		sr.err = errors.New("flow: read on closed stream")
		sr.st.refuse(StreamCode(jsonrpc.CodeRequestCancelled))
	}
	return nil
}
