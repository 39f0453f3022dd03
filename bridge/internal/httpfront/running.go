package httpfront

import "sync"

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
