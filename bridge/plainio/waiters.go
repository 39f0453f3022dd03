package bridge

import (
	"sync"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// waiters matches responses to the requests a bridge sent on one side (to
// the host, to an upstream). Safe for concurrent use.
type waiters struct {
	mu sync.Mutex
	m  map[jsonrpc.ID]chan *jsonrpc.Response
}

// add registers id and returns the channel its response arrives on, and a
// function that forgets it.
func (w *waiters) add(id jsonrpc.ID) (<-chan *jsonrpc.Response, func()) {
	ch := make(chan *jsonrpc.Response, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = map[jsonrpc.ID]chan *jsonrpc.Response{}
	}
	w.m[id] = ch
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.m, id)
		w.mu.Unlock()
	}
}

// deliver hands r to its waiter, if any; the channel holds one response, so
// a duplicate is dropped rather than blocking.
func (w *waiters) deliver(r *jsonrpc.Response) {
	w.mu.Lock()
	ch := w.m[r.ID]
	w.mu.Unlock()
	if ch != nil {
		select {
		case ch <- r:
		default:
		}
	}
}

// running counts goroutines as a sync.WaitGroup does, except that Add may
// come while Wait waits (a session that ends while the front closes starts
// its core's finish then): Wait returns once the count is zero. A
// WaitGroup forbids that Add, and the race detector reports it.
type running struct {
	mu   sync.Mutex
	cond *sync.Cond // made by the first Wait
	n    int
}

func (r *running) Add(d int) {
	r.mu.Lock()
	if r.n += d; r.n == 0 && r.cond != nil {
		r.cond.Broadcast()
	}
	r.mu.Unlock()
}

func (r *running) Done() { r.Add(-1) }

func (r *running) Wait() {
	r.mu.Lock()
	if r.cond == nil {
		r.cond = sync.NewCond(&r.mu)
	}
	for r.n > 0 {
		r.cond.Wait()
	}
	r.mu.Unlock()
}
