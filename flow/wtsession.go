package flow

import (
	"github.com/mcp-flow/mcp-flow/wtconn"
	"github.com/quic-go/webtransport-go"
)

// WTSession is what a Session needs of its WebTransport session (spec §3):
// the control stream, execution streams, datagrams and the close. It is
// package wtconn's seam, which the conformance runner speaks through too. A
// *webtransport.Session serves through WrapWebTransport; other dialects
// (internal/draft02, for draft-02 servers such as the v0.1 examples)
// implement it themselves. Its errors are webtransport-go's:
// *webtransport.SessionError when the session ended, *webtransport.StreamError
// for a reset stream; Context's cause is the session's end.
type WTSession = wtconn.Session

// WTReceiveStream is the receiving side of a WebTransport stream.
type WTReceiveStream = wtconn.ReceiveStream

// WTSendStream is the sending side of a WebTransport stream; Close is its
// FIN. A Write past the write deadline returns what it wrote and an error
// wrapping os.ErrDeadlineExceeded (Limits.StreamWriteStallTimeout).
type WTSendStream = wtconn.SendStream

// WTStream is a bidirectional WebTransport stream.
type WTStream = wtconn.Stream

// WrapWebTransport adapts a webtransport-go session to WTSession.
func WrapWebTransport(s *webtransport.Session) WTSession { return wtconn.Wrap(s) }

// wtSession is what WrapWebTransport returns; wtCloseErr reads the ending
// of its webtransport-go session.
type wtSession = wtconn.WebTransport
