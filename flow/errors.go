package flow

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
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

// ErrWriteStalled is the cause of an execution stream reset because the
// peer took none of its bytes for Limits.StreamWriteStallTimeout (spec §5.4).
var ErrWriteStalled = errors.New("flow: write stalled: the peer read nothing for the stall timeout")

// ErrClosed is the cause of a session closed by this side without error.
var ErrClosed = errors.New("flow: session closed")

// SessionError ends a session. Code is the close code of spec §8.2, the
// same on both sides for the same ending (CloseText gives its words).
type SessionError struct {
	Code   webtransport.SessionErrorCode
	Remote bool   // the peer closed the session, or went away
	Reason string // what happened, for people: the close message on the wire
	Err    error  // the underlying error, if any
}

var _ error = (*SessionError)(nil)

func (e *SessionError) Error() string {
	who := "closed here"
	switch {
	case e.Code == CloseConnectionLost:
		who = "noticed here" // nobody closed it: the peer fell silent
	case e.Remote:
		who = "closed by the peer"
	}
	s := fmt.Sprintf("flow: session ended: %s (code %d, %s)", CloseText(e.Code), e.Code, who)
	if e.Reason != "" && e.Reason != CloseText(e.Code) {
		s += ": " + e.Reason
	}
	if e.Err != nil && e.Err != ErrClosed {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *SessionError) Unwrap() error { return e.Err }

// clean reports whether e is a complete $/shutdown drain: code 0 and
// nothing lost.
func (e *SessionError) clean() bool {
	return e.Code == CloseOK && (e.Err == nil || e.Err == ErrClosed)
}

// errUnanswered is the cause of a CloseOK from the peer that left calls of
// ours without an answer.
var errUnanswered = errors.New("requests of ours were left unanswered")

// closeFromPeer maps why the WebTransport session ended, when this side did
// not end it, to a *SessionError (spec §8.2): the peer's close code and
// message when it sent a close, CloseConnectionLost when the QUIC
// connection went silent (idle timeout) or was reset, CloseGoingAway when
// the peer dropped its connection without closing the session. A drained
// side (the peer ended after $/shutdown, nothing of ours in flight) turns a
// connection dropped by the peer into CloseOK; it is the other direction
// (closing a session) that ends with sendClose.
func closeFromPeer(cause error, drained bool) *SessionError {
	e := &SessionError{Code: CloseGoingAway, Remote: true, Err: cause}
	var we *webtransport.SessionError
	var he *http3.Error
	var ae *quic.ApplicationError
	switch {
	case errors.As(cause, &we):
		e.Code, e.Reason, e.Err = we.ErrorCode, we.Message, nil
		if e.Code == CloseOK && !drained {
			e.Err = errUnanswered
		}
		return e
	case connectionLost(cause):
		e.Code, e.Reason = CloseConnectionLost, "no packets from the peer within the QUIC idle timeout, or a stateless reset"
		return e
	case errors.As(cause, &ae) || (errors.As(cause, &he) && (he.ErrorMessage == http3.ErrCodeNoError.String() ||
		strings.HasPrefix(he.ErrorMessage, "Application error "))):
		e.Reason = "the peer closed its connection without closing the session"
	default:
		e.Reason = "the WebTransport session ended"
	}
	if drained {
		e.Code, e.Reason, e.Err = CloseOK, "the peer closed its connection after the drain", nil
	}
	return e
}

// connectionLost reports whether err says that the QUIC connection timed
// out or was reset. webtransport-go hands the CONNECT stream's error on as
// text only (an *http3.Error), so the text is compared too.
func connectionLost(err error) bool {
	var it *quic.IdleTimeoutError
	var sr *quic.StatelessResetError
	if errors.As(err, &it) || errors.As(err, &sr) {
		return true
	}
	var he *http3.Error
	return errors.As(err, &he) && (he.ErrorMessage == (&quic.IdleTimeoutError{}).Error() ||
		he.ErrorMessage == (&quic.StatelessResetError{}).Error())
}

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
