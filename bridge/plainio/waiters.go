package plainio

import (
	"sync"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// Waiters matches responses to the requests a bridge sent on one side (to
// the host, to an upstream). Safe for concurrent use.
type Waiters struct {
	mu sync.Mutex
	m  map[jsonrpc.ID]chan *jsonrpc.Response
}

// Add registers id and returns the channel its response arrives on, and a
// function that forgets it.
func (w *Waiters) Add(id jsonrpc.ID) (<-chan *jsonrpc.Response, func()) {
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

// Deliver hands r to its waiter, if any; the channel holds one response, so
// a duplicate is dropped rather than blocking.
func (w *Waiters) Deliver(r *jsonrpc.Response) {
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
