package workload

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// A Target is an MCP client connected to a server over one transport.
type Target interface {
	Ping(ctx context.Context) error
	// Echo calls the echo tool (its Call's text argument, when it has
	// one, is text).
	Echo(ctx context.Context, text string) error
	// Fetch asks for an n-byte result and reads all of it, returning the
	// number of payload bytes received.
	Fetch(ctx context.Context, n int64) (int64, error)
	Close()
}

// EchoCalls makes n echo calls on t from c goroutines at once and returns
// their latencies; the first failure ends the run.
func EchoCalls(ctx context.Context, t Target, c, n int) ([]time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var l []time.Duration
	var mu sync.Mutex
	var firstErr error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range c {
		wg.Go(func() {
			var mine []time.Duration
			defer func() { mu.Lock(); l = append(l, mine...); mu.Unlock() }()
			for next.Add(1) <= int64(n) {
				s := time.Now()
				if err := t.Echo(ctx, "hello"); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("echo: %w", err)
					}
					mu.Unlock()
					cancel()
					return
				}
				mine = append(mine, time.Since(s))
			}
		})
	}
	wg.Wait()
	return l, firstErr
}

// Large fetches an n-byte result from t once and returns how long it took;
// fewer bytes than n is an error.
func Large(ctx context.Context, t Target, n int64) (time.Duration, error) {
	t0 := time.Now()
	got, err := t.Fetch(ctx, n)
	if err == nil && got != n {
		err = fmt.Errorf("fetched %d of %d bytes", got, n)
	}
	return time.Since(t0), err
}

// CopyDiscard reads r to its end, 256 KiB at a time (an execution stream's
// write size), and returns how many bytes it read.
func CopyDiscard(r io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	return io.CopyBuffer(io.Discard, r, buf)
}
