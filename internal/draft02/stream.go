package draft02

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/quicvarint"
	"github.com/quic-go/webtransport-go"
)

// acceptBidi takes the peer's bidirectional streams; HTTP/3 refuses those
// that are not WebTransport's.
func (s *Session) acceptBidi() {
	for {
		q, err := s.conn.AcceptStream(context.Background())
		if err != nil {
			return
		}
		go sortStream(s, q, bidiSignal, s.cc.HandleBidirectionalStream,
			func(q *quic.Stream) { q.CancelRead(sessionGoneCode); q.CancelWrite(sessionGoneCode) },
			func(q *quic.Stream) *Stream { return &Stream{q: q, s: s} }, s.bidi)
	}
}

// acceptUni takes the peer's unidirectional streams; HTTP/3's own (the
// control and QPACK streams) go to the HTTP/3 connection.
func (s *Session) acceptUni() {
	for {
		q, err := s.conn.AcceptUniStream(context.Background())
		if err != nil {
			return
		}
		go sortStream(s, q, uniStreamType, s.cc.HandleUnidirectionalStream,
			func(q *quic.ReceiveStream) { q.CancelRead(sessionGoneCode) },
			func(q *quic.ReceiveStream) *ReceiveStream { return &ReceiveStream{q: q, s: s} }, s.uni)
	}
}

// openStream opens a stream with open and writes the draft's stream header
// (kind: bidiSignal or uniStreamType; then the session id), which sortStream
// reads on the peer's streams.
func openStream[Q io.Writer](ctx context.Context, s *Session, kind uint64, open func(context.Context) (Q, error)) (Q, error) {
	var none Q
	if err := s.Err(); err != nil {
		return none, err
	}
	q, err := open(ctx)
	if err != nil {
		return none, s.mapErr(err)
	}
	if _, err := q.Write(quicvarint.Append(quicvarint.Append(nil, kind), s.id)); err != nil {
		return none, s.mapErr(err)
	}
	return q, nil
}

// sortStream reads the type (or signal) that starts a stream of the peer:
// a stream of another kind goes to other; a WebTransport stream of this
// session is queued, one of another session is refused.
func sortStream[Q interface {
	io.Reader
	quicvarint.Peeker
}, W any](s *Session, q Q, kind uint64, other, refuse func(Q), wrap func(Q) W, queue chan<- W) {
	typ, err := quicvarint.Peek(q)
	if err != nil {
		return
	}
	if typ != kind {
		other(q)
		return
	}
	r := quicvarint.NewReader(q)
	_, _ = quicvarint.Read(r)
	id, err := quicvarint.Read(r)
	if !s.ours(id, err) {
		refuse(q)
		return
	}
	select {
	case queue <- wrap(q):
	case <-s.ctx.Done():
		refuse(q)
	}
}

// ours reports whether a stream header names this session, waiting for
// the CONNECT's answer if the stream overtook it.
func (s *Session) ours(id uint64, err error) bool {
	if err != nil {
		return false
	}
	select {
	case <-s.ready:
	case <-s.ctx.Done():
		return false
	case <-s.conn.Context().Done():
		return false
	}
	return id == s.id
}

// mapErr turns a QUIC stream reset in the WebTransport range into a
// *webtransport.StreamError, and any error after the session's end into
// the session's error. No error stays none: a write or read that succeeded
// just before the session ended succeeded (a pair's run once saw the
// $/shutdown it wrote fail with the close it caused).
func (s *Session) mapErr(err error) error {
	if err == nil {
		return nil
	}
	var qe *quic.StreamError
	if errors.As(err, &qe) {
		if qe.ErrorCode == sessionGoneCode {
			if se := s.Err(); se != nil {
				return se
			}
			return &webtransport.SessionError{Remote: qe.Remote, Message: "the session ended"}
		}
		if c, ok := fromHTTPCode(qe.ErrorCode); ok {
			return &webtransport.StreamError{ErrorCode: c, Remote: qe.Remote}
		}
	}
	if se := s.Err(); se != nil && !errors.Is(err, io.EOF) {
		var st *webtransport.StreamError
		if !errors.As(err, &st) {
			return se
		}
	}
	return err
}

func toHTTPCode(n webtransport.StreamErrorCode) quic.StreamErrorCode {
	return quic.StreamErrorCode(firstErrorCode) + quic.StreamErrorCode(n) + quic.StreamErrorCode(n/0x1e)
}

func fromHTTPCode(h quic.StreamErrorCode) (webtransport.StreamErrorCode, bool) {
	if h < firstErrorCode || h > lastErrorCode || (h-0x21)%0x1f == 0 {
		return 0, false
	}
	shifted := h - firstErrorCode
	return webtransport.StreamErrorCode(shifted - shifted/0x1f), true
}

// Stream is a bidirectional stream of a draft-02 session.
type Stream struct {
	q *quic.Stream
	s *Session
}

func (st *Stream) Read(b []byte) (int, error) {
	n, err := st.q.Read(b)
	return n, st.s.mapErr(err)
}

func (st *Stream) Write(b []byte) (int, error) {
	n, err := st.q.Write(b)
	return n, st.s.mapErr(err)
}

// Close finishes the sending side (FIN).
func (st *Stream) Close() error { return st.q.Close() }

// CancelRead asks the peer to stop sending, with code.
func (st *Stream) CancelRead(code webtransport.StreamErrorCode) { st.q.CancelRead(toHTTPCode(code)) }

// CancelWrite resets the sending side with code.
func (st *Stream) CancelWrite(code webtransport.StreamErrorCode) { st.q.CancelWrite(toHTTPCode(code)) }

// SetReadDeadline bounds the reads.
func (st *Stream) SetReadDeadline(t time.Time) error { return st.q.SetReadDeadline(t) }

// SetWriteDeadline bounds the writes.
func (st *Stream) SetWriteDeadline(t time.Time) error { return st.q.SetWriteDeadline(t) }

// ReceiveStream is a unidirectional stream the peer opened.
type ReceiveStream struct {
	q *quic.ReceiveStream
	s *Session
}

func (st *ReceiveStream) Read(b []byte) (int, error) {
	n, err := st.q.Read(b)
	return n, st.s.mapErr(err)
}

// CancelRead asks the peer to stop sending, with code.
func (st *ReceiveStream) CancelRead(code webtransport.StreamErrorCode) {
	st.q.CancelRead(toHTTPCode(code))
}

// SetReadDeadline bounds the reads.
func (st *ReceiveStream) SetReadDeadline(t time.Time) error { return st.q.SetReadDeadline(t) }

// SendStream is a unidirectional stream this side opened.
type SendStream struct {
	q *quic.SendStream
	s *Session
}

func (st *SendStream) Write(b []byte) (int, error) {
	n, err := st.q.Write(b)
	return n, st.s.mapErr(err)
}

// Close finishes the stream (FIN).
func (st *SendStream) Close() error { return st.q.Close() }

// CancelWrite resets the stream with code.
func (st *SendStream) CancelWrite(code webtransport.StreamErrorCode) {
	st.q.CancelWrite(toHTTPCode(code))
}

// SetWriteDeadline bounds the writes.
func (st *SendStream) SetWriteDeadline(t time.Time) error { return st.q.SetWriteDeadline(t) }
