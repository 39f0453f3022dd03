package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
)

// moveBound bounds one move: the probe of the new path is a round trip,
// repeated with backoff while it is lost.
const moveBound = 10 * time.Second

// moveWatch is the CLI's answer to a change of network (docs/spec.md §2.1):
// every MCP-Flow session dialled with its Mover moves to a new local socket
// on each SIGUSR1, and once -migrate-after after arm. Each move is said on
// stderr.
type moveWatch struct {
	armed chan time.Duration
	stop  func() // ends the watch, once a move under way is done; idempotent
}

// watchMoves starts the watch over m's sessions: from now on SIGUSR1 moves
// them (it no longer ends the process). say reports each move.
func watchMoves(m *flow.Mover, say func(format string, a ...any)) *moveWatch {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	w := &moveWatch{armed: make(chan time.Duration, 1)}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var timer <-chan time.Time
		var after time.Duration
		tm := time.NewTimer(time.Hour)
		tm.Stop()
		defer tm.Stop()
		for {
			why := "SIGUSR1"
			select {
			case <-quit:
				return
			case after = <-w.armed:
				tm.Reset(after)
				timer = tm.C
				continue
			case <-sig:
			case <-timer:
				why, timer = "-migrate-after "+after.String(), nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), moveBound)
			n, err := m.Move(ctx)
			cancel()
			if err != nil {
				say("mcp-flow: %s: moved %d session(s) to a new local socket; others did not: %v", why, n, err)
				continue
			}
			say("mcp-flow: %s: moved %d session(s) to a new local socket", why, n)
		}
	})
	w.stop = sync.OnceFunc(func() {
		signal.Stop(sig)
		close(quit)
		wg.Wait()
	})
	return w
}

// arm moves the sessions once, after d (-migrate-after; 0: never). Call it
// once.
func (w *moveWatch) arm(d time.Duration) {
	if d > 0 {
		w.armed <- d
	}
}
