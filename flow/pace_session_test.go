package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
)

// TestPacedWriteEndsWithSession: a write waiting on its pace (a path of
// 1 s, whose floor of paceMinRate makes 4 MiB take half a minute) ends when
// the session does, with the error an unpaced write gets there, not the
// session context's.
func TestPacedWriteEndsWithSession(t *testing.T) {
	type result struct {
		n   int
		err error
	}
	writing, done := make(chan struct{}), make(chan result, 1)
	srv := customServer(t, flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		w, err := req.OpenStream("application/octet-stream")
		if err != nil {
			return nil, err
		}
		flow.PaceStreamWith(w, time.Second, time.Second)
		go func() {
			close(writing)
			n, err := w.Write(make([]byte, 4<<20))
			done <- result{n, err}
		}()
		return map[string]any{"content": []any{w.Ref()}}, nil
	}), nil)
	s := dial(t, srv, nil)
	if _, err := s.Call(context.Background(), "big", nil); err != nil {
		t.Fatal(err)
	}
	<-writing
	if err := s.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	select {
	case r := <-done:
		if r.err == nil || r.n >= 4<<20 {
			t.Fatalf("Write returned %d, %v after the session ended, want an error before all 4 MiB", r.n, r.err)
		}
		if errors.Is(r.err, context.Canceled) || errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("Write failed with the session context's %v (%T), want the stream's error", r.err, r.err)
		}
		t.Logf("Write: %d bytes, %v (%T)", r.n, r.err, r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("a paced Write went on 10 s after its session ended")
	}
}
