package flow

import (
	"context"
	"io"
	"time"

	"github.com/quic-go/webtransport-go"
)

// WTSession is what a Session needs of its WebTransport session (spec §3):
// the control stream, execution streams, datagrams and the close. A
// *webtransport.Session serves through WrapWebTransport; other dialects
// (internal/draft02, for draft-02 servers such as the v0.1 examples)
// implement it themselves. Its errors are webtransport-go's:
// *webtransport.SessionError when the session ended, *webtransport.StreamError
// for a reset stream; Context's cause is the session's end.
type WTSession interface {
	Context() context.Context
	CloseWithError(webtransport.SessionErrorCode, string) error
	SendDatagram([]byte) error
	ReceiveDatagram(context.Context) ([]byte, error)
	OpenStreamSync(context.Context) (WTStream, error)
	AcceptStream(context.Context) (WTStream, error)
	OpenUniStreamSync(context.Context) (WTSendStream, error)
	AcceptUniStream(context.Context) (WTReceiveStream, error)
}

// WTReceiveStream is the receiving side of a WebTransport stream.
type WTReceiveStream interface {
	io.Reader
	CancelRead(webtransport.StreamErrorCode)
	SetReadDeadline(time.Time) error
}

// WTSendStream is the sending side of a WebTransport stream; Close is its
// FIN. A Write past the write deadline returns what it wrote and an error
// wrapping os.ErrDeadlineExceeded (Limits.StreamWriteStallTimeout).
type WTSendStream interface {
	io.WriteCloser
	CancelWrite(webtransport.StreamErrorCode)
	SetWriteDeadline(time.Time) error
}

// WTStream is a bidirectional WebTransport stream.
type WTStream interface {
	WTReceiveStream
	WTSendStream
}

// WrapWebTransport adapts a webtransport-go session to WTSession.
func WrapWebTransport(s *webtransport.Session) WTSession { return wtSession{s} }

type wtSession struct{ *webtransport.Session }

// The stream methods return a nil interface, never a nil pointer in one.

func (s wtSession) OpenStreamSync(ctx context.Context) (WTStream, error) {
	st, err := s.Session.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (s wtSession) AcceptStream(ctx context.Context) (WTStream, error) {
	st, err := s.Session.AcceptStream(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (s wtSession) OpenUniStreamSync(ctx context.Context) (WTSendStream, error) {
	st, err := s.Session.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (s wtSession) AcceptUniStream(ctx context.Context) (WTReceiveStream, error) {
	st, err := s.Session.AcceptUniStream(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}
