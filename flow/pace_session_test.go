package flow_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
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

// TestPacedStreamFailurePaths: through a path of 10 ms (a relay, 5 ms each
// way), where execution streams are paced, the ways a stream fails end a
// paced writer as they end an unpaced one: the client stops reading the
// stream it had begun (its Close refuses it: STOP_SENDING with -32800),
// and a client that never reads the stream (the write-stall timeout resets
// it). Each writer must end within 15 s, and the session goes on (a ping).
func TestPacedStreamFailurePaths(t *testing.T) {
	type result struct {
		n   int64
		err error
	}
	const size = 256 << 20 // far more than 10 ms of path lets through in 15 s
	for _, c := range []struct {
		name string
		read bool // read 1 MiB, then Close; else never read
	}{{"reader stops", true}, {"never read", false}} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan result, 1)
			paced := make(chan bool, 1)
			srv := customServer(t, flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
				if req.Method != "big" {
					return map[string]any{}, nil
				}
				w, err := req.OpenStream("application/octet-stream")
				if err != nil {
					return nil, err
				}
				paced <- flow.Paced(w)
				go func() {
					buf := make([]byte, 64<<10)
					var n int64
					for n < size {
						k, err := w.Write(buf)
						n += int64(k)
						if err != nil {
							done <- result{n, err}
							return
						}
					}
					done <- result{n, w.Close()}
				}()
				return map[string]any{"content": []any{w.Ref()}}, nil
			}), func(c *flow.ServerConfig) { c.Limits.StreamWriteStallTimeout = 2 * time.Second })
			path := lossrelay.Path{Delay: 5 * time.Millisecond}
			relay, err := lossrelay.New(lossrelay.Config{Target: srv.Addr().(*net.UDPAddr), Up: path, Down: path})
			if err != nil {
				t.Fatal(err)
			}
			defer relay.Close()
			s := dialURL(t, "https://"+relay.Addr().String()+flow.DefaultPath, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := s.Call(ctx, "big", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !<-paced {
				t.Fatal("the stream is not paced on a 10 ms path")
			}
			if c.read {
				sr, err := r.Stream(ctx, 1)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.CopyN(io.Discard, sr, 1<<20); err != nil {
					t.Fatal(err)
				}
				sr.Close()
			}
			select {
			case res := <-done:
				if res.err == nil || res.n >= size {
					t.Fatalf("the writer ended after %d bytes with %v, want an error before %d", res.n, res.err, size)
				}
				var se *flow.StreamError
				if !errors.As(res.err, &se) {
					t.Fatalf("the writer ended with %v (%T), want a *flow.StreamError", res.err, res.err)
				}
				t.Logf("the paced writer ended after %d bytes: %v", res.n, res.err)
			case <-time.After(15 * time.Second):
				t.Fatal("a paced writer went on 15 s after its stream failed")
			}
			if err := s.Ping(ctx); err != nil {
				t.Fatalf("the session after the failed stream: %v", err)
			}
		})
	}
}
