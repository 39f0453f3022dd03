package flow

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/quic-go/webtransport-go"
)

// StreamWriter writes one execution stream (spec §5): a unidirectional
// stream that the server opens for a result, starting with the 8-byte header.
// The result names it with the content block Ref returns.
//
// Write and Close/Fail are meant for one goroutine; Fail and a concurrent
// $/cancel are safe together.
type StreamWriter struct {
	s    *Session
	in   *inbound
	id   uint32
	tag  uint32
	mime string
	st   WTSendStream
	once sync.Once
	// written counts the payload bytes the stream took (EventStream).
	written atomic.Int64
	ev      streamEvents
	pace    *pacer // nil: not paced (pace.go)
}

// OpenStream opens an execution stream for this request's result. It fails
// with -32000 when the session already has maxConcurrentStreams open (spec
// §5.3), and when the request id is not an integer in [0, 2^32-1], which
// stream headers cannot name (spec §3.2).
func (r *Request) OpenStream(mimeType string) (*StreamWriter, error) {
	s := r.Session
	id, ok := r.ID.Uint32()
	if !ok {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "request id "+r.ID.String()+" is not a 32-bit integer; execution streams need one (spec §3.2)")
	}
	s.mu.Lock()
	if r.in.cancelled || r.in.responded {
		s.mu.Unlock()
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "request already answered or cancelled")
	}
	if s.streamSlots >= s.lim.MaxConcurrentStreams {
		s.mu.Unlock()
		return nil, jsonrpc.NewError(jsonrpc.CodeStreamLimitExceeded, fmt.Sprintf("stream limit exceeded: %d execution streams open (maxConcurrentStreams, spec §5.3)", s.lim.MaxConcurrentStreams))
	}
	s.openStreams++
	s.streamSlots++
	r.in.nextTag++
	w := &StreamWriter{s: s, in: r.in, id: id, tag: r.in.nextTag, mime: mimeType, pace: s.newPacer()}
	s.mu.Unlock()

	st, err := s.wt.OpenUniStreamSync(s.ctx)
	if err == nil {
		w.st = st
		_, err = writeStalling(st, s.streamHeader(wire.StreamHeader{RequestID: id, StreamTag: w.tag}), s.lim.StreamWriteStallTimeout)
	}
	s.mu.Lock()
	if err == nil && r.in.cancelled {
		err = jsonrpc.NewError(jsonrpc.CodeRequestCancelled, "request cancelled")
	}
	if err != nil {
		s.openStreams--
		s.streamSlots--
		s.mu.Unlock()
		if w.st != nil {
			w.st.CancelWrite(StreamCode(jsonrpc.CodeRequestCancelled))
		}
		s.maybeFinish()
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return nil, je
		}
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "opening execution stream: "+err.Error())
	}
	if r.in.streams == nil {
		r.in.streams = map[uint32]*StreamWriter{}
	}
	r.in.streams[w.tag] = w
	tracked := s.trackStream(w)
	s.mu.Unlock()
	w.ev.open(s, w.openEvent)
	if !tracked { // the session ended while it opened
		w.endAtClose()
	}
	return w, nil
}

// StreamFrom opens an execution stream and copies src into it on its own
// goroutine, returning the ref/stream content block at once. When src fails,
// the stream is reset and $/streamError sent (spec §5.4), so the client never
// takes a truncated stream for a whole one.
func (r *Request) StreamFrom(src io.Reader, mimeType string) (StreamRef, error) {
	w, err := r.OpenStream(mimeType)
	if err != nil {
		return StreamRef{}, err
	}
	go func() {
		buf := make([]byte, 256<<10)
		if _, err := io.CopyBuffer(w, src, buf); err != nil {
			w.Fail(err)
			return
		}
		_ = w.Close()
	}()
	return w.Ref(), nil
}

// Ref returns the content block naming this stream in the result.
func (w *StreamWriter) Ref() StreamRef {
	return StreamRef{Type: protocol.ContentTypeRef, StreamTag: w.tag, MimeType: w.mime}
}

// Tag returns the stream tag.
func (w *StreamWriter) Tag() uint32 { return w.tag }

// Write writes payload bytes. A write of which the peer takes nothing for
// Limits.StreamWriteStallTimeout (it reads nothing, and QUIC flow control
// holds the bytes back) resets the stream with 32603 and sends
// $/streamError (spec §5.4); it fails with a *StreamError wrapping
// ErrWriteStalled. On a path of 1 ms or more, Write paces itself to keep
// the bottleneck's queue short (Limits.StreamQueueDelay, pace.go).
func (w *StreamWriter) Write(p []byte) (int, error) {
	written := 0
	for {
		// A wait cut short by the session's end goes on to the write,
		// which fails as an unpaced one does (the session's error, not
		// the context's).
		c, _ := w.pace.next(w.s.ctx, len(p)-written)
		n, err := w.write(p[written : written+c])
		written += n
		if err != nil || written == len(p) {
			return written, err
		}
	}
}

func (w *StreamWriter) write(p []byte) (int, error) {
	n, err := writeStalling(w.st, p, w.s.lim.StreamWriteStallTimeout)
	w.written.Add(int64(n))
	if errors.Is(err, ErrWriteStalled) {
		msg := fmt.Sprintf("write stalled: the peer read nothing of this stream for %v (spec §5.4)", w.s.lim.StreamWriteStallTimeout)
		w.reset(jsonrpc.CodeInternalError, msg, true)
		return n, &StreamError{RequestID: w.id, StreamTag: w.tag, Code: jsonrpc.CodeInternalError, Reason: msg, Err: err}
	}
	if err != nil {
		var se *webtransport.StreamError
		if errors.As(err, &se) {
			return n, &StreamError{RequestID: w.id, StreamTag: w.tag, Code: -jsonrpc.Code(se.ErrorCode), Err: err}
		}
	}
	return n, err
}

// Close ends the stream cleanly: everything written is the whole payload.
func (w *StreamWriter) Close() error {
	var err error
	w.once.Do(func() {
		w.freeSlot()
		err = w.st.Close()
		streamEnding()
		outcome, code := "ok", jsonrpc.Code(0)
		var se *webtransport.StreamError
		if errors.As(err, &se) { // the peer stopped reading it first
			outcome, code = "reset", -jsonrpc.Code(se.ErrorCode)
		}
		w.ended(outcome, code)
		w.release()
	})
	return err
}

// Fail resets the stream with -32603 and sends $/streamError with cause's
// text (spec §5.4).
func (w *StreamWriter) Fail(cause error) {
	if w.s.faults().TruncateWithoutStreamError {
		_ = w.Close()
		return
	}
	msg := "stream failed"
	if cause != nil {
		msg = cause.Error()
	}
	w.reset(jsonrpc.CodeInternalError, msg, true)
}

func (w *StreamWriter) reset(code jsonrpc.Code, msg string, notify bool) {
	w.once.Do(func() {
		w.freeSlot()
		w.st.CancelWrite(StreamCode(code))
		streamEnding()
		if notify {
			if err := w.s.Notify(protocol.MethodStreamError, StreamErrorParams{RequestID: w.id, StreamTag: w.tag, Error: msg}); err != nil {
				w.s.log.Debug("$/streamError not sent", "err", err)
			}
		}
		w.ended("reset", code)
		w.release()
	})
}

// ended emits the stream's EventStream, before release lets a drain end;
// nothing, when the session's end has emitted it (endAtClose).
func (w *StreamWriter) ended(outcome string, code jsonrpc.Code) {
	w.ev.end(w.s, w.openEvent, func() Event {
		return Event{Kind: EventStream, Method: w.in.method, ID: w.in.id.String(), Tag: w.tag,
			Bytes: w.written.Load(), Outcome: outcome, Code: int64(code)}
	})
}

// openEvent is the stream's EventStreamOpen.
func (w *StreamWriter) openEvent() Event {
	return Event{Kind: EventStreamOpen, Method: w.in.method, ID: w.in.id.String(), Tag: w.tag}
}

// endAtClose emits the EventStream of a stream the session's end cut off
// before its handler closed or failed it (which then emits none).
func (w *StreamWriter) endAtClose() { w.ended("reset", jsonrpc.CodeRequestCancelled) }

// freeSlot gives the stream's MaxConcurrentStreams slot back before its
// FIN or reset leaves (spec §5.3 counts streams open at once): a peer that
// has read a stream to its end and opens work at once must find the slot
// free, not wait for the rest of the stream's ending (release).
func (w *StreamWriter) freeSlot() {
	w.s.mu.Lock()
	w.s.streamSlots--
	w.s.mu.Unlock()
}

// streamEndingHook, when set (tests only: export_test.go), runs between a
// stream's FIN or reset and its release.
var streamEndingHook atomic.Pointer[func()]

// closingHook, when set (tests only: export_test.go), runs in closeWith
// between the session's context's cancel and its close.
var closingHook atomic.Pointer[func()]

func streamEnding() {
	if h := streamEndingHook.Load(); h != nil {
		(*h)()
	}
}

func (w *StreamWriter) release() {
	s := w.s
	s.mu.Lock()
	s.openStreams--
	delete(w.in.streams, w.tag)
	delete(s.live, w)
	s.mu.Unlock()
	s.settleInbound(w.in)
}

// writeStalling writes p to st, and fails with ErrWriteStalled once the
// peer has taken none of it for stall (spec §5.4). A write that makes
// progress, however slowly, goes on: each deadline counts from the last
// byte taken.
func writeStalling(st WTSendStream, p []byte, stall time.Duration) (int, error) {
	written := 0
	for {
		_ = st.SetWriteDeadline(time.Now().Add(stall))
		n, err := st.Write(p[written:])
		written += n
		switch {
		case err == nil:
			return written, nil
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return written, err
		case n == 0:
			return written, ErrWriteStalled
		}
	}
}
