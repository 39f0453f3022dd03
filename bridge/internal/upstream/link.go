package upstream

import (
	"context"
	"log/slog"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// An upstream reached message by message, with no framing in between: an
// in-process server whose connection takes and hands out messages (package
// bridge/sdkflow's go-sdk server).

// Connect opens one session's connection to an in-process upstream server
// (NewLinkUpstream). The connection hands every message of the server's to
// recv (from any goroutine, several at once), and calls end once when its
// side is over. send passes one message to the server: one goroutine calls
// it, in order, and it may block while the server does not take the
// message; close ends the connection, unblocking a send, and returns once
// the server's side has ended.
type Connect func(ctx context.Context, recv func(jsonrpc.Message), end func(error)) (send func(jsonrpc.Message) error, close func(), err error)

// NewLinkUpstream returns an upstream that reaches, per session, the
// connection connect opens: messages pass as they are, neither encoded nor
// framed. Content past threshold bytes (0: the default, 256 KiB) leaves the
// control stream on execution streams (spec §10).
func NewLinkUpstream(connect Connect, threshold int, log *slog.Logger) *Upstream {
	u := newUpstream(nil, threshold, 0, log)
	u.dial = func(ctx context.Context, recv func(jsonrpc.Message), end func(error)) (upstreamLink, error) {
		send, closeFn, err := connect(ctx, recv, end)
		if err != nil {
			return nil, err
		}
		return funcLink{send, closeFn}, nil
	}
	return u
}

// funcLink is a link made of Connect's two functions.
type funcLink struct {
	sendFn  func(jsonrpc.Message) error
	closeFn func()
}

func (l funcLink) send(m jsonrpc.Message) error { return l.sendFn(m) }
func (l funcLink) close()                       { l.closeFn() }
