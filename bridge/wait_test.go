package bridge_test

import (
	"sync/atomic"
	"testing"
	"time"
)

// progressCount counts the progress notifications a client hands to its
// callback, which the go-sdk and flow clients run on goroutines of their
// own (so they may come after the call's result), and closes reached when
// want of them have arrived.
type progressCount struct {
	want    int32
	n       atomic.Int32
	reached chan struct{}
}

func newProgressCount(want int) *progressCount {
	return &progressCount{want: int32(want), reached: make(chan struct{})}
}

// add counts one notification; safe for concurrent use.
func (p *progressCount) add() {
	if p.n.Add(1) == p.want {
		close(p.reached)
	}
}

// wait fails the test unless exactly want notifications arrived: it waits
// for the count to be reached, then checks that none more came.
func (p *progressCount) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-p.reached:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: %d progress notifications after 10 s, want %d", what, p.n.Load(), p.want)
	}
	if n := p.n.Load(); n != p.want {
		t.Fatalf("%s: %d progress notifications, want %d", what, n, p.want)
	}
}
