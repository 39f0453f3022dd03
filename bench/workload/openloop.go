package workload

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// A Sample is one ping of an open loop: when it was scheduled to be sent
// (from the start of its phase) and how long it took from then to its
// answer. A ping sent late because the sender was not scheduled counts
// that lateness too: no coordinated omission.
type Sample struct{ At, Lat time.Duration }

// OpenLoop sends a ping every interval on its own goroutine, each timed
// from its scheduled send time, until count pings are sent (count > 0) or
// stop is closed, then waits for every answer. A failed ping fails the
// loop. The samples come back in order of their scheduled time.
func OpenLoop(ctx context.Context, ping func(context.Context) error, interval time.Duration, count int, stop <-chan struct{}) ([]Sample, error) {
	t0 := time.Now()
	var (
		mu       sync.Mutex
		out      []Sample
		firstErr error
		wg       sync.WaitGroup
	)
	tm := time.NewTimer(0)
	defer tm.Stop()
	<-tm.C
	for i := 0; count <= 0 || i < count; i++ {
		at := time.Duration(i) * interval
		if wait := time.Until(t0.Add(at)); wait > 0 {
			tm.Reset(wait)
			select {
			case <-tm.C:
			case <-stop:
				tm.Stop()
			}
		}
		select {
		case <-stop:
			count = i // stopped: no more sends
		default:
		}
		if count > 0 && i >= count {
			break
		}
		wg.Go(func() {
			err := ping(ctx)
			lat := time.Since(t0) - at
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("ping %d: %w", i, err)
			}
			out = append(out, Sample{at, lat})
		})
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b Sample) int { return int(a.At - b.At) })
	return out, firstErr
}

// Quantile returns the q-quantile (nearest rank) of sorted latencies.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Latencies returns the samples' latencies, sorted.
func Latencies(s []Sample) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = x.Lat
	}
	slices.Sort(out)
	return out
}

// LongestStall is the longest time, from the start of the phase to its
// last answer, during which no ping was answered: with a ping every 2 ms,
// ideally 2 ms.
func LongestStall(s []Sample) time.Duration {
	done := make([]time.Duration, len(s))
	for i, x := range s {
		done[i] = x.At + x.Lat
	}
	slices.Sort(done)
	var prev, worst time.Duration
	for _, d := range done {
		worst = max(worst, d-prev)
		prev = d
	}
	return worst
}
