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

// watchMoves is the CLI's answer to a change of network (docs/spec.md
// §2.1): every MCP-Flow session dialled with m moves to a new local socket
// on each SIGUSR1, and once after `after` when it is positive (-migrate-after).
// say reports each move on stderr. stop ends the watch and waits for a move
// under way.
func watchMoves(m *flow.Mover, after time.Duration, say func(format string, a ...any)) (stop func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	var timer <-chan time.Time
	tm := time.NewTimer(after)
	if after > 0 {
		timer = tm.C
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			why := "SIGUSR1"
			select {
			case <-quit:
				return
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
	return func() {
		tm.Stop()
		signal.Stop(sig)
		close(quit)
		wg.Wait()
	}
}
