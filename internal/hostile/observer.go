package hostile

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
)

// Observer is a well-behaved session (package flow's client) beside an
// attack: its ping latency is what the attack must not spoil.
type Observer struct {
	S *flow.Session
}

// Observe dials url as a well-behaved client.
func Observe(ctx context.Context, url string, tlsConf *tls.Config) (*Observer, error) {
	s, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: tlsConf, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	return &Observer{S: s}, nil
}

// Pings pings n times, one after the other, and returns the latencies.
func (o *Observer) Pings(ctx context.Context, n int) ([]time.Duration, error) {
	var d []time.Duration
	for range n {
		t0 := time.Now()
		if err := o.S.Ping(ctx); err != nil {
			return d, fmt.Errorf("hostile: the observer's ping: %w", err)
		}
		d = append(d, time.Since(t0))
	}
	return d, nil
}

// PingEvery is the observer's pace during an attack: a ping at most this
// often, so that the observer's own load on the server stays small beside
// the attack's.
const PingEvery = 5 * time.Millisecond

// During pings in a loop, at most every PingEvery, until stop is called;
// stop returns the latencies of the pings that began before it was called
// (the one in flight then included), and the first ping error. Every ping
// is bounded by ctx.
func (o *Observer) During(ctx context.Context) (stop func() ([]time.Duration, error)) {
	done := make(chan struct{})
	out := make(chan result, 1)
	go func() {
		var r result
		tick := time.NewTicker(PingEvery)
		defer tick.Stop()
		for {
			t0 := time.Now()
			if err := o.S.Ping(ctx); err != nil {
				r.err = fmt.Errorf("hostile: the observer's ping during the attack: %w", err)
				out <- r
				return
			}
			r.d = append(r.d, time.Since(t0))
			select {
			case <-done:
				out <- r
				return
			case <-tick.C:
			}
		}
	}()
	return func() ([]time.Duration, error) {
		close(done)
		r := <-out
		return r.d, r.err
	}
}

type result struct {
	d   []time.Duration
	err error
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of d, by the nearest rank; 0
// for none.
func Quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// LatencyFloor is the smallest latency bound an attack is held to. On a
// shared, loaded 2-core machine a ping of 1 ms idle can take tens of
// milliseconds for reasons of its own (other processes' bursts, the test's
// own attacker on the same cores), so the bound is the larger of 10× the
// idle median and this floor. With two suites side by side (2026-12-06)
// the median during an attack measured 0.28-1.72 ms, and the server's CPU
// 0.01-0.27 s in the attacks frames_test.go bounds at 1-2 CPU-seconds.
const LatencyFloor = 50 * time.Millisecond

// LatencyBound is the latency an observer's median ping must stay within
// during an attack: max(10 × idle median, LatencyFloor).
func LatencyBound(idleP50 time.Duration) time.Duration { return max(10*idleP50, LatencyFloor) }
