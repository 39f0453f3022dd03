package flow_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// TestControlFramesCoalesce: frames sent at once on a session's control
// stream leave in one write (sendWith's group commit), so that a burst of
// small messages takes a packet or two, not one each. The server sends 32
// notifications from 32 goroutines and holds the one that is to write
// where it yields: the other 31 have their frames taken and return while
// it is held, and the client then gets all 32, whole, before the result
// that follows them. Fails when each sender writes its own frame: no
// sender yields (or, were the write lock held while it does, the others
// wait for the held one). Not parallel: the hook is the process's.
func TestControlFramesCoalesce(t *testing.T) {
	const n = 32
	h := holdYield(t)
	yielded, let := h.yielded, h.let
	fail := make(chan string, 1)
	handler := flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		h.arm()
		var returned sync.WaitGroup
		returned.Add(n)
		errs := make(chan error, n)
		for i := range n {
			go func() {
				defer returned.Done()
				errs <- req.Session.Notify("notifications/message", map[string]any{"level": "info", "data": i})
			}()
		}
		select {
		case <-yielded:
		case <-time.After(10 * time.Second):
			fail <- "no sender yielded before writing the pending frames"
			let()
			returned.Wait()
			return map[string]any{}, nil
		}
		// Each of the other 31 returns once its frame is taken.
		for range n - 1 {
			select {
			case err := <-errs:
				if err != nil {
					fail <- "Notify: " + err.Error()
				}
			case <-time.After(10 * time.Second):
				fail <- "the other senders waited for the held one"
				let()
				returned.Wait()
				return map[string]any{}, nil
			}
		}
		let()
		returned.Wait()
		if err := <-errs; err != nil {
			fail <- "Notify of the held sender: " + err.Error()
		}
		return map[string]any{}, nil
	})
	srv := customServer(t, handler, nil)
	var mu sync.Mutex
	seen := map[int]bool{}
	s := dial(t, srv, func(c *flow.ClientConfig) {
		c.Hooks.Notification = func(_ *flow.Session, m *jsonrpc.Request) {
			var p struct{ Data int }
			if json.Unmarshal(m.Params, &p) == nil {
				mu.Lock()
				seen[p.Data] = true
				mu.Unlock()
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := s.Call(ctx, "burst", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-fail:
		t.Fatal(msg)
	default:
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		t.Fatalf("the client got %d of the %d notifications before the result", len(seen), n)
	}
}

// TestPendingFramesBeforeFIN: frames taken for a write that has not
// happened yet are written before the control stream's FIN (spec §7.2: a
// reply is written before the FIN or not at all). The server's handler
// has a notification sent from a goroutine that is held where it yields,
// so that the notification, the handler's result and the server's
// $/shutdown are all pending when the server's drain, with nothing left
// in flight, sends its FIN; the FIN finds them and writes them first, and
// the call is answered. Fails without finish's flush: the FIN goes first
// and the three are lost.
func TestPendingFramesBeforeFIN(t *testing.T) {
	h := holdYield(t)
	sessions := make(chan *flow.Session, 1)
	handler := flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		sessions <- req.Session
		if err := h.notify(req, "pending"); err != nil {
			return nil, err
		}
		return map[string]any{"answered": true}, nil
	})
	s, got := countingClient(t, handler)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type answer struct {
		r   *flow.Response
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		r, err := s.Call(ctx, "x", nil)
		answered <- answer{r, err}
	}()
	select {
	case <-h.yielded:
	case <-ctx.Done():
		t.Fatal("no sender yielded")
	}
	shut := make(chan error, 1)
	server := <-sessions
	go func() { shut <- server.Shutdown(ctx, "test") }()
	a := <-answered
	h.let()
	if a.err != nil {
		t.Fatalf("the call whose answer was pending at the drain's FIN: %v", a.err)
	}
	if string(a.r.Result) != `{"answered":true}` {
		t.Fatalf("result %s", a.r.Result)
	}
	if got.Load() != 1 {
		t.Fatalf("%d notifications before the result, want the pending one", got.Load())
	}
	if err := <-shut; err != nil {
		t.Fatalf("the server's Shutdown: %v", err)
	}
}

// TestLargeFrameAfterPending: a frame too large to be copied into the
// pending ones (over 16 KiB) is written after those taken before it, so
// the control stream keeps the order frames were sent in. A notification
// is held pending (its sender held where it yields), then the handler's
// result of 64 KiB is sent: the client sees the notification before the
// result. Fails when the large frame is written without the pending ones
// first: the result arrives alone, and the notification after it.
func TestLargeFrameAfterPending(t *testing.T) {
	h := holdYield(t)
	big := strings.Repeat("x", 64<<10)
	handler := flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		if err := h.notify(req, "first"); err != nil {
			return nil, err
		}
		return map[string]any{"text": big}, nil
	})
	s, got := countingClient(t, handler)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := s.Call(ctx, "x", nil)
	h.let()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Result) < len(big) {
		t.Fatalf("a result of %d bytes, want over %d", len(r.Result), len(big))
	}
	if got.Load() != 1 {
		t.Fatal("the result came before the notification sent ahead of it")
	}
}

// held is the first sender that yields after arm (flow.SetYieldHook): it
// waits there until let, or the test's end. yielded is closed when it does.
type held struct {
	arm     func()
	yielded <-chan struct{}
	let     func()
	senders sync.WaitGroup // notify's goroutines
}

func holdYield(t *testing.T) *held {
	var armed atomic.Bool
	y, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := &held{arm: func() { armed.Store(true) }, yielded: y, let: func() { once.Do(func() { close(release) }) }}
	t.Cleanup(func() { h.let(); h.senders.Wait() })
	flow.SetYieldHook(t, func() {
		if armed.CompareAndSwap(true, false) {
			close(y)
			<-release
		}
	})
	return h
}

// notify has the handler's session send a notification with data from a
// goroutine of its own that is held where it yields, and waits until it
// is held.
func (h *held) notify(req *flow.Request, data string) error {
	h.arm()
	h.senders.Go(func() {
		_ = req.Session.Notify("notifications/message", map[string]any{"level": "info", "data": data})
	})
	select {
	case <-h.yielded:
		return nil
	case <-time.After(10 * time.Second):
		return jsonrpc.NewError(jsonrpc.CodeInternalError, "no sender yielded")
	}
}

// countingClient serves handler and dials it; got counts the notifications
// the client receives.
func countingClient(t *testing.T, handler flow.Handler) (s *flow.Session, got *atomic.Int32) {
	got = new(atomic.Int32)
	s = dial(t, customServer(t, handler, nil), func(c *flow.ClientConfig) {
		c.Hooks.Notification = func(*flow.Session, *jsonrpc.Request) { got.Add(1) }
	})
	return s, got
}
