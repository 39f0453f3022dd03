package workload

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestOpenLoopCountsStalls: the peer answers nothing for the first 50 ms,
// then at once. An open loop keeps sending on its schedule, so the pings
// scheduled during the stall each count their full wait from their
// scheduled time (ping 0: 50 ms, the one at 20 ms: 30 ms), and the longest
// stall is 50 ms. A closed loop would have counted one slow ping.
func TestOpenLoopCountsStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ping := func(context.Context) error {
			if wait := time.Until(start.Add(50 * time.Millisecond)); wait > 0 {
				time.Sleep(wait)
			}
			return nil
		}
		s, err := OpenLoop(context.Background(), ping, 2*time.Millisecond, 100, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 100 {
			t.Fatalf("%d samples, want 100", len(s))
		}
		for _, x := range s {
			want := time.Duration(0)
			if x.At < 50*time.Millisecond {
				want = 50*time.Millisecond - x.At
			}
			if x.Lat != want {
				t.Fatalf("ping scheduled at %v took %v, want %v", x.At, x.Lat, want)
			}
		}
		if st := LongestStall(s); st != 50*time.Millisecond {
			t.Errorf("longest stall %v, want 50ms", st)
		}
		l := Latencies(s)
		if p50, max := Quantile(l, 0.5), Quantile(l, 1); p50 != 0 || max != 50*time.Millisecond {
			t.Errorf("p50 %v max %v, want 0 and 50ms", p50, max)
		}
	})
}

// TestOpenLoopStops: a loop without a count ends when stop closes, and
// every ping it sent is answered and counted.
func TestOpenLoopStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stop := make(chan struct{})
		time.AfterFunc(21*time.Millisecond, func() { close(stop) })
		s, err := OpenLoop(context.Background(), func(context.Context) error { time.Sleep(time.Millisecond); return nil }, 2*time.Millisecond, 0, stop)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 11 { // at 0, 2, …, 20 ms
			t.Fatalf("%d pings before stop at 21 ms, want 11", len(s))
		}
	})
}
