package upstream

import (
	"context"
	"io"
	"log/slog"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// An upstream reached message by message, with no framing in between: an
// in-process server whose connection takes and hands out messages (package
// bridge/sdkflow's go-sdk server).

// Link is one session's connection to an in-process upstream server
// (NewLinkUpstream), as Connect opens it.
type Link struct {
	// Send passes one message to the server: one goroutine calls it, in
	// order, and it may block while the server does not take the message.
	Send func(jsonrpc.Message) error
	// Close ends the connection, unblocking a Send, and returns once the
	// server's side has ended.
	Close func()
	// Raw, when set, takes the URI of a resource_link block of the
	// server's result that starts with RawPrefix (a raw stream the server
	// registered with its connection, spec §10): it returns the stream's
	// MIME type and the function that writes its bytes, and forgets it;
	// ok is false for a URI it does not know.
	Raw func(uri string) (mime string, write RawWriter, ok bool)
}

// RawWriter writes a raw stream's bytes to w (rawout.go); ctx ends when
// the stream fails (the client cancelled or refused it) or its session
// ends. An error of its own fails the stream ($/streamError, spec §5.4).
type RawWriter func(ctx context.Context, w io.Writer) error

// Connect opens one session's connection to an in-process upstream server
// (NewLinkUpstream). The connection hands every message of the server's to
// recv (from any goroutine, several at once), and calls end once when its
// side is over.
type Connect func(ctx context.Context, recv func(jsonrpc.Message), end func(error)) (Link, error)

// NewLinkUpstream returns an upstream that reaches, per session, the
// connection connect opens: messages pass as they are, neither encoded nor
// framed. Content past threshold bytes (0: the default, 256 KiB) leaves the
// control stream on execution streams (spec §10), and so do the raw
// streams a result names (Link.Raw).
func NewLinkUpstream(connect Connect, threshold int, log *slog.Logger) *Upstream {
	u := newUpstream(nil, threshold, 0, log)
	u.dial = func(ctx context.Context, recv func(jsonrpc.Message), end func(error)) (upstreamLink, error) {
		l, err := connect(ctx, recv, end)
		if err != nil {
			return nil, err
		}
		return funcLink{l}, nil
	}
	return u
}

// funcLink is a link made of a Link's functions.
type funcLink struct{ l Link }

func (l funcLink) send(m jsonrpc.Message) error { return l.l.Send(m) }
func (l funcLink) close()                       { l.l.Close() }

func (l funcLink) raw(uri string) (string, RawWriter, bool) {
	if l.l.Raw == nil {
		return "", nil, false
	}
	return l.l.Raw(uri)
}
