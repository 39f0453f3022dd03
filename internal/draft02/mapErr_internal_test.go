package draft02

import (
	"context"
	"errors"
	"testing"

	"github.com/quic-go/webtransport-go"
)

// TestMapErrKeepsSuccess: after the session ended, a read or write that
// returned no error still returns none; one that failed gets the
// session's error.
func TestMapErrKeepsSuccess(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &Session{ctx: ctx, cancel: cancel}
	closed := &webtransport.SessionError{Remote: true}
	s.end(closed)
	if err := s.mapErr(nil); err != nil {
		t.Errorf("mapErr(nil) after the session's end: %v, want nil", err)
	}
	if err := s.mapErr(errors.New("stream closed")); !errors.Is(err, closed) {
		t.Errorf("mapErr of a failure after the session's end: %v, want the session's error", err)
	}
}
