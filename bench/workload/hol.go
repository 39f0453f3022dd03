package workload

import (
	"context"
	"fmt"
	"time"
)

// HOLConfig shapes HeadOfLine.
type HOLConfig struct {
	// Bytes is the size of the large result.
	Bytes int64
	// Interval is the open loop's schedule (a ping every Interval).
	Interval time.Duration
	// IdlePings is how many pings the idle phase sends first (0: none).
	IdlePings int
	// OnTransfer, when set, is called as the transfer starts; what it
	// returns is called as the transfer ends (before the busy loop
	// stops): the benchmarks account for the CPU and the schedulers there.
	OnTransfer func() func()
}

// HOL is one head-of-line measurement.
type HOL struct {
	Idle, Busy []Sample
	// Transfer is how long the large result took, Bytes its payload.
	Transfer time.Duration
	Bytes    int64
	// BusyStart is when the busy open loop started (Unix ns), the origin
	// of the busy samples' At.
	BusyStart int64
}

// HeadOfLine pings t open loop while idle (c.IdlePings), then open loop
// while t fetches a c.Bytes result on the same session: the busy phase
// lasts as long as the transfer.
func HeadOfLine(ctx context.Context, t Target, c HOLConfig) (*HOL, error) {
	var idle []Sample
	if c.IdlePings > 0 {
		var err error
		if idle, err = OpenLoop(ctx, t.Ping, c.Interval, c.IdlePings, nil); err != nil {
			return nil, fmt.Errorf("idle: %w", err)
		}
	}
	stop := make(chan struct{})
	fetched := make(chan error, 1)
	var got int64
	var transfer time.Duration
	var end func()
	if c.OnTransfer != nil {
		end = c.OnTransfer()
	}
	t0 := time.Now()
	go func() {
		var err error
		got, err = t.Fetch(ctx, c.Bytes)
		transfer = time.Since(t0)
		if end != nil {
			end()
		}
		if err == nil && got != c.Bytes {
			err = fmt.Errorf("fetched %d of %d bytes", got, c.Bytes)
		}
		close(stop)
		fetched <- err
	}()
	r := &HOL{BusyStart: time.Now().UnixNano()}
	busy, perr := OpenLoop(ctx, t.Ping, c.Interval, 0, stop)
	if err := <-fetched; err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	if perr != nil {
		return nil, fmt.Errorf("during the transfer: %w", perr)
	}
	r.Idle, r.Busy, r.Transfer, r.Bytes = idle, busy, transfer, got
	return r, nil
}

// MBps is the transfer's rate in MB/s (10⁶ bytes a second).
func (r *HOL) MBps() float64 { return float64(r.Bytes) / r.Transfer.Seconds() / 1e6 }
