// Package wtconn is the small seam between MCP-Flow and a WebTransport
// implementation (spec §3): a session with its control stream, execution
// streams, datagrams and close, and the streams' two sides. A
// *webtransport.Session (webtransport-go) serves through Wrap; another
// dialect (internal/draft02, for draft-02 peers such as the published v0.1
// examples) implements Session itself, and package wtconn/memwt is an
// in-memory one for tests under testing/synctest.
//
// Both the implementation (package flow, as flow.WTSession) and the judge
// (package conformance) speak through it, which is why it is a package of its
// own: it holds no MCP-Flow rule, only the shape of a WebTransport session,
// and imports nothing of this module but webtransport-go.
//
// Errors are webtransport-go's in every dialect: *webtransport.SessionError
// when the session ended, *webtransport.StreamError for a reset stream;
// Context's cause is the session's end.
package wtconn

import (
	"context"
	"io"
	"time"

	"github.com/quic-go/webtransport-go"
)

// Session is a WebTransport session: what an MCP-Flow peer needs of it.
type Session interface {
	Context() context.Context
	CloseWithError(webtransport.SessionErrorCode, string) error
	SendDatagram([]byte) error
	ReceiveDatagram(context.Context) ([]byte, error)
	OpenStreamSync(context.Context) (Stream, error)
	AcceptStream(context.Context) (Stream, error)
	OpenUniStreamSync(context.Context) (SendStream, error)
	AcceptUniStream(context.Context) (ReceiveStream, error)
}

// ReceiveStream is the receiving side of a WebTransport stream.
type ReceiveStream interface {
	io.Reader
	CancelRead(webtransport.StreamErrorCode)
	SetReadDeadline(time.Time) error
}

// SendStream is the sending side of a WebTransport stream; Close is its
// FIN. A Write past the write deadline returns what it wrote and an error
// wrapping os.ErrDeadlineExceeded.
type SendStream interface {
	io.WriteCloser
	CancelWrite(webtransport.StreamErrorCode)
	SetWriteDeadline(time.Time) error
}

// Stream is a bidirectional WebTransport stream.
type Stream interface {
	ReceiveStream
	SendStream
}

// Wrap adapts a webtransport-go session to Session: a WebTransport.
func Wrap(s *webtransport.Session) Session { return WebTransport{s} }

// WebTransport is a webtransport-go session as Session. Its stream methods
// return a nil interface, never a nil pointer in one. The embedded session
// stays at hand for what the seam does not carry (flow learns from it why a
// session ended, which webtransport-go keeps unexported).
type WebTransport struct{ *webtransport.Session }

func (s WebTransport) OpenStreamSync(ctx context.Context) (Stream, error) {
	st, err := s.Session.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (s WebTransport) AcceptStream(ctx context.Context) (Stream, error) {
	st, err := s.Session.AcceptStream(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (s WebTransport) OpenUniStreamSync(ctx context.Context) (SendStream, error) {
	st, err := s.Session.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (s WebTransport) AcceptUniStream(ctx context.Context) (ReceiveStream, error) {
	st, err := s.Session.AcceptUniStream(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}
