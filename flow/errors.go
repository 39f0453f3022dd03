package flow

import (
	"errors"
	"fmt"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/quic-go/webtransport-go"
)

// MCP-Flow errors come in three scopes, like HTTP/2's (spec §8):
//
//   - session: *SessionError. The session is over; nothing more will be
//     delivered on it.
//   - execution stream: *StreamError. One stream failed; the request and the
//     session carry on.
//   - request: *jsonrpc.Error. One request failed; the session carries on.

// ErrShuttingDown is returned by Call after $/shutdown was sent or received.
var ErrShuttingDown = jsonrpc.NewError(jsonrpc.CodeShuttingDown, "session is shutting down")

// ErrClosed is the cause of a session closed by this side without error.
var ErrClosed = errors.New("flow: session closed")

// SessionError ends a session.
type SessionError struct {
	Code   webtransport.SessionErrorCode
	Remote bool   // the peer closed the session
	Reason string // what went wrong, for people
	Err    error  // the underlying error, if any
}

var _ error = (*SessionError)(nil)

func (e *SessionError) Error() string {
	who := "local"
	if e.Remote {
		who = "remote"
	}
	s := fmt.Sprintf("flow: session closed (%s, code %d): %s", who, e.Code, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *SessionError) Unwrap() error { return e.Err }

// StreamError reports a failed execution stream (spec §5.4). A reader never
// gets io.EOF for a stream that did not end cleanly: it gets a *StreamError.
type StreamError struct {
	RequestID uint32
	StreamTag uint32
	// Code is the JSON-RPC code the stream was reset with (spec §5.4), e.g.
	// -32800 when the request was cancelled, -32603 when the writer failed.
	Code jsonrpc.Code
	// Reason is the error text of the matching $/streamError, if one came.
	Reason string
	Err    error
}

var _ error = (*StreamError)(nil)

func (e *StreamError) Error() string {
	s := fmt.Sprintf("flow: execution stream %d of request %d failed (%d %s)", e.StreamTag, e.RequestID, e.Code, e.Code)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

func (e *StreamError) Unwrap() error { return e.Err }
