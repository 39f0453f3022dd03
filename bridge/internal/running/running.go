// Package running counts what a bridge side has started and not yet
// finished (the cores of ended sessions, the upstream connections), as a
// sync.WaitGroup does, except that Add may come while Wait waits: a
// session that ends while its front closes starts its core's finish then,
// and an upstream connection opened by a session whose handshake the
// waiter saw only through the network has no happens-before edge the race
// detector can see. A WaitGroup forbids both Adds (its doc: "calls with a
// positive delta that occur when the counter is zero must happen before a
// Wait"); Count guards its count with a mutex instead.
package running

import (
	"context"
	"sync"
)

// Count is a count of things running; its zero value is ready to use.
type Count struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n reaches zero; made by the first Wait that finds n > 0
}

// Add adds d, which may be negative, to the count. A count below zero
// panics, as a WaitGroup's does.
func (c *Count) Add(d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += d
	if c.n < 0 {
		panic("running: negative count")
	}
	if c.n == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// Done subtracts one from the count.
func (c *Count) Done() { c.Add(-1) }

// Wait returns nil once the count is zero, or ctx's cause when ctx ends
// first. Wait does not start a goroutine: nothing waits on after it returns.
func (c *Count) Wait(ctx context.Context) error {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	c.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
