package flow_test

// Tests of the bounds on what a peer can make a server spend by not reading,
// by holding a shutdown hostage or by cheap floods (spec §5.4, §7.2, §8).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/mcp-flow/mcp-flow/wtconn/memwt"
	"github.com/quic-go/webtransport-go"
)

// TestUnreadStreamsStall: a client that never reads the 64 execution streams
// of a result still gets its pings answered at once, and each stream is
// reset with 32603 and reported with $/streamError once its writer has made
// no progress for StreamWriteStallTimeout (spec §5.4): the writer gets the
// error, the reader a *StreamError naming the stall, never io.EOF, and the
// server holds no stream of the session any more. It runs over memwt on
// synctest's clock: the stall is the state machine's; that the streams
// cannot fill QUIC's connection window is TestUnreadStreamsLeaveControlFlowing's.
func TestUnreadStreamsStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 64
		const stall = 4 * time.Second
		var (
			writers sync.WaitGroup
			werrs   = make(chan error, n)
			stalled = make(chan struct{})
			once    sync.Once
		)
		s, _, srvSess := memPair(t, func(c *flow.ServerConfig) {
			c.Handler = unreadStreams(n, &writers, func(err error) {
				once.Do(func() { close(stalled) })
				werrs <- err
			})
			c.Limits.StreamWriteStallTimeout = stall
		}, nil)
		r, err := s.Call(t.Context(), "big", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Refs) != n {
			t.Fatalf("%d refs, want %d", len(r.Refs), n)
		}
		// Nothing reads the streams. The control stream must still flow.
		for i := range 10 {
			pctx, pcancel := context.WithTimeout(t.Context(), stall/2)
			err := s.Ping(pctx)
			pcancel()
			if err != nil {
				t.Fatalf("ping %d with %d execution streams unread: %v", i, n, err)
			}
		}
		select {
		case <-stalled:
			t.Fatalf("the pings were answered only after a stream had stalled for %v", stall)
		default:
		}
		done := make(chan struct{})
		go func() { writers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(stall + time.Minute): // synctest's clock: a hang guard
			t.Fatalf("the writers of unread streams were not stopped within %v of the stall timeout", time.Minute)
		}
		close(werrs)
		for err := range werrs {
			var se *flow.StreamError
			if !errors.As(err, &se) || se.Code != jsonrpc.CodeInternalError || !errors.Is(err, flow.ErrWriteStalled) {
				t.Fatalf("writer of an unread stream got %v, want a *flow.StreamError -32603 wrapping ErrWriteStalled", err)
			}
		}
		if left := flow.OpenStreams(srvSess); left != 0 {
			t.Fatalf("the server still holds %d execution streams after the stall", left)
		}
		// The client sees each stream cut, with the reason, never as
		// complete. The server sent each $/streamError before its writer
		// returned, so a ping answered now has them all ahead of it on the
		// control stream.
		if err := s.Ping(t.Context()); err != nil {
			t.Fatalf("ping after the streams were reset: %v", err)
		}
		for _, ref := range r.Refs {
			sr, err := r.Stream(t.Context(), ref.StreamTag)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(io.Discard, sr)
			var se *flow.StreamError
			if !errors.As(err, &se) || se.Code != jsonrpc.CodeInternalError || !strings.Contains(se.Reason, "stalled") {
				t.Fatalf("stream %d: read ended with %v (reason %q), want -32603 naming the stall", ref.StreamTag, err, reasonOf(se))
			}
		}
	})
}

// TestUnreadStreamsLeaveControlFlowing: over real QUIC, a client that never
// reads the 64 execution streams of a result still gets its pings answered
// at once: the streams cannot fill the connection's flow-control window
// (spec §8). The stall that ends them is TestUnreadStreamsStall's; here
// the session's close ends the writers.
func TestUnreadStreamsLeaveControlFlowing(t *testing.T) {
	const n = 64
	var writers sync.WaitGroup
	werrs := make(chan error, n)
	srv := customServer(t, unreadStreams(n, &writers, func(err error) { werrs <- err }), func(c *flow.ServerConfig) {
		c.Limits.StreamWriteStallTimeout = 10 * time.Minute // no stall within the test
	})
	s := dial(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard
	defer cancel()
	r, err := s.Call(ctx, "big", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Refs) != n {
		t.Fatalf("%d refs, want %d", len(r.Refs), n)
	}
	var slowest time.Duration
	for i := range 10 {
		start := time.Now()
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("ping %d with %d execution streams unread: %v (after %v)", i, n, err, time.Since(start))
		}
		slowest = max(slowest, time.Since(start))
	}
	t.Logf("10 pings with %d execution streams unread: the slowest took %v", n, slowest)
	select {
	case err := <-werrs:
		t.Fatalf("a writer of an unread stream ended before the session: %v", err)
	default:
	}
	s.Close()
	writers.Wait()
}

// unreadStreams is a handler that opens n execution streams and answers
// with their refs, each written with 64 KiB chunks on a goroutine of its own
// (counted in writers) until a Write fails, whose error goes to failed.
func unreadStreams(n int, writers *sync.WaitGroup, failed func(error)) flow.Handler {
	return flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		content := make([]any, 0, n)
		for range n {
			w, err := req.OpenStream("application/octet-stream")
			if err != nil {
				return nil, err
			}
			content = append(content, w.Ref())
			writers.Go(func() {
				buf := make([]byte, 64<<10)
				for {
					if _, err := w.Write(buf); err != nil {
						failed(err)
						return
					}
				}
			})
		}
		return map[string]any{"content": content}, nil
	})
}

func reasonOf(se *flow.StreamError) string {
	if se == nil {
		return ""
	}
	return se.Reason
}

// TestShutdownNotHeldHostage: a client that sends requests and never reads
// the control stream cannot hold a server's shutdown past the drain deadline
// (spec §7.2): Server.Shutdown returns within DrainTimeout (or its context)
// plus a little, the hostile session ends with code 3, and a well-behaved
// session on the same server drains normally: its call in flight is
// answered and it ends with code 0.
func TestShutdownNotHeldHostage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
		ctx   time.Duration // 0: none
	}{
		{"drain deadline", 2 * time.Second, 0},
		{"shutdown context", 30 * time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			var echoed, slowStarted <-chan struct{}
			srv := startServer(t, func(c *flow.ServerConfig) {
				c.Limits.DrainTimeout = tc.drain
				echoed = gateTool(c, "echo", nil)
				slowStarted = gateTool(c, "slow", release)
			})
			good := dial(t, srv, nil)
			p := initRaw(t, srv)
			for i := range unreadCalls {
				p.write(unreadCall(100 + i))
			}
			for range unreadCalls {
				<-echoed
			}
			goodCall := make(chan error, 1)
			go func() {
				_, err := good.Call(context.Background(), "tools/call", map[string]any{"name": "slow", "arguments": map[string]int{"steps": 1, "delayMs": 1}})
				goodCall <- err
			}()
			<-slowStarted
			go func() {
				<-good.Draining()
				close(release)
			}()
			ctx := context.Background()
			if tc.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctx)
				defer cancel()
			}
			bound := tc.drain
			if tc.ctx > 0 {
				bound = tc.ctx
			}
			start := time.Now()
			shut := make(chan error, 1)
			go func() { shut <- srv.Shutdown(ctx) }()
			select {
			case <-shut:
			case <-time.After(bound + 20*time.Second):
				t.Fatalf("Server.Shutdown still running %v after it began (the deadline was %v): held hostage by a client that does not read", time.Since(start), bound)
			}
			if took := time.Since(start); took > bound+3*time.Second {
				t.Fatalf("Server.Shutdown took %v; the deadline was %v", took, bound)
			} else {
				t.Logf("Server.Shutdown took %v (deadline %v)", took, bound)
			}
			if err := <-goodCall; err != nil {
				t.Fatalf("the well-behaved session's call in flight: %v", err)
			}
			<-good.Done()
			var se *flow.SessionError
			if err := good.Err(); !errors.As(err, &se) || se.Code != flow.CloseOK {
				t.Fatalf("the well-behaved session ended with %v, want code 0", err)
			}
			select {
			case <-p.sess.Context().Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the hostile session is still open after Shutdown returned")
			}
		})
	}
}

// unreadCalls echo calls of 64 KiB each (unreadCall) draw replies past the
// windows of a raw client that reads nothing (quic-go's defaults: 512 KiB per
// stream, 768 KiB per connection, never opened further without reads).
const unreadCalls = 40

// unreadCall is the frame of echo call id with 64 KiB of text.
func unreadCall(id int) []byte {
	return frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`, id, strings.Repeat("x", 64<<10)))
}

// countHandler counts the log records at level or above whose message
// contains substr.
type countHandler struct {
	level  slog.Level
	substr string
	n      *atomic.Int64
}

func (h countHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h countHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.substr) {
		h.n.Add(1)
	}
	return nil
}
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countHandler) WithGroup(string) slog.Handler      { return h }

// TestInjectionFloodIsRateLimited: 3,000 unidirectional streams opened by a
// client (each an injection, spec §5.3) are each refused, but cost at most
// one -32002 reply and one WARN line a second per session, as datagram errors
// do (spec §6, §8); the session answers a ping after them.
func TestInjectionFloodIsRateLimited(t *testing.T) {
	const streams = 3000
	var warns atomic.Int64
	srv := startServer(t, func(c *flow.ServerConfig) {
		c.Logger = slog.New(countHandler{level: slog.LevelWarn, substr: "execution stream", n: &warns})
	})
	p := initRaw(t, srv)
	frames := make(chan []byte, 64)
	go func() {
		defer close(frames)
		for {
			var hdr [4]byte
			if _, err := io.ReadFull(p.ctrl, hdr[:]); err != nil {
				return
			}
			b := make([]byte, int(hdr[0])<<24|int(hdr[1])<<16|int(hdr[2])<<8|int(hdr[3]))
			if _, err := io.ReadFull(p.ctrl, b); err != nil {
				return
			}
			frames <- b
		}
	}()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range streams {
		st, err := p.sess.OpenUniStreamSync(ctx)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		st.Write(wire.StreamHeader{RequestID: 999, StreamTag: uint32(i + 1)}.Append(nil))
		st.Close()
	}
	p.write(frame(`{"jsonrpc":"2.0","id":77,"method":"ping"}`))
	injections := 0
	for b := range frames {
		var r struct {
			ID    json.RawMessage
			Error *jsonrpc.Error
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		if string(r.ID) == "77" {
			break
		}
		if r.Error == nil || r.Error.Code != jsonrpc.CodeStreamInjection {
			t.Fatalf("unexpected frame %s", b)
		}
		injections++
	}
	took := time.Since(start)
	bound := 2 + int(took/time.Second)
	t.Logf("%d streams in %v: %d -32002 replies, %d WARN lines", streams, took, injections, warns.Load())
	if injections == 0 {
		t.Fatal("no -32002 reply at all")
	}
	if injections > bound {
		t.Fatalf("%d -32002 replies in %v, want at most %d (one a second)", injections, took, bound)
	}
	if w := warns.Load(); w > int64(bound) {
		t.Fatalf("%d WARN lines in %v, want at most %d (one a second)", w, took, bound)
	}
}

// TestShutdownBeforeInitialize: $/shutdown before initialize is not
// processed (spec §2: before READY only initialize and ping are): it is
// answered -32600 with a null id, the next request gets its answer, and the
// session can then initialize.
func TestShutdownBeforeInitialize(t *testing.T) {
	srv := startServer(t, nil)
	p, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.write(frame(`{"jsonrpc":"2.0","method":"$/shutdown"}`))
	p.write(frame(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	expectError(t, p.read(), `null`, jsonrpc.CodeInvalidRequest)
	expectError(t, p.read(), `1`, jsonrpc.CodeInvalidRequest)
	p.write(frame(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	if got := string(p.read()); got != `{"jsonrpc":"2.0","id":2,"result":{}}` {
		t.Fatalf("ping after $/shutdown before initialize: %s", got)
	}
	p.write(frame(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"},"transport":{"type":"mcp-flow","version":"0.1","encodings":["json"]}}}`))
	var r struct{ Result *flow.InitializeResult }
	if b := p.read(); json.Unmarshal(b, &r) != nil || r.Result == nil {
		t.Fatalf("initialize after $/shutdown before initialize: %s", b)
	}
}

// TestControlStreamStall: a client that sends requests and never reads the
// control stream cannot hold its session open: once a reply has made no
// progress for StreamWriteStallTimeout the server closes the session with
// code 8 (spec §8.2), and another session carries on. It runs over memwt
// on synctest's clock.
func TestControlStreamStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stall = 2 * time.Second
		good, srv, _ := memPair(t, func(c *flow.ServerConfig) { c.Limits.StreamWriteStallTimeout = stall }, nil)
		p := initMemRaw(t, srv)
		// 512 KiB of replies: twice memwt's stream window. The server may
		// close the session before all are sent, so a failed write only
		// ends the sending.
		const calls = 2 * memwt.DefaultStreamWindow / (64 << 10)
		go func() {
			for i := range calls {
				if _, err := p.ctrl.Write(unreadCall(100 + i)); err != nil {
					return
				}
			}
		}()
		select {
		case <-p.sess.Context().Done():
		case <-time.After(stall + time.Minute): // synctest's clock: a hang guard
			t.Fatalf("a session whose peer reads nothing is still open %v after its stall timeout", time.Minute)
		}
		_, err := p.sess.OpenStreamSync(t.Context())
		var we *webtransport.SessionError
		if !errors.As(err, &we) || we.ErrorCode != flow.CloseStalled {
			t.Fatalf("the session ended with %v, want code %d (%s)", err, flow.CloseStalled, flow.CloseText(flow.CloseStalled))
		}
		if err := good.Ping(t.Context()); err != nil {
			t.Fatalf("the other session: %v", err)
		}
	})
}
