package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Causes of the CLI's context ending.
var (
	errInterrupted = errors.New("interrupted (Ctrl-C)")
	errTimeout     = errors.New("-timeout expired")
)

// interruptible returns a context that the first SIGINT (Ctrl-C) or SIGTERM
// cancels with errInterrupted (the call in flight is then cancelled with
// $/cancel and the CLI exits 130 once the session is closed); a second one
// exits at once with 130. stop releases the signals.
func interruptible(parent context.Context, t *term) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case <-sig:
		case <-quit:
			return
		}
		t.mute()
		t.say("mcp-flow: interrupted: cancelling (Ctrl-C again to quit at once)")
		cancel(errInterrupted)
		select {
		case <-sig:
			t.say("mcp-flow: quit")
			os.Exit(exitInterrupted)
		case <-quit:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(quit)
		<-ended
		cancel(nil)
	}
}

// withTimeout bounds ctx by the -timeout flag (0: no bound), with
// errTimeout as the cause.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, d, errTimeout)
}

// failure reports err, which ended what the CLI was doing, and returns the
// exit code: 130 after an interrupt, exitTimeout when -timeout expired,
// else by the error's kind (reportErr).
func failure(ctx context.Context, t *term, o options, err error, doing string) int {
	t.clear()
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errInterrupted):
		t.say("mcp-flow: interrupted while %s; the server was sent $/cancel", doing)
		return exitInterrupted
	case errors.Is(cause, errTimeout):
		t.say("mcp-flow: -timeout %v expired while %s", o.timeout, doing)
		return exitTimeout
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return reportErr(t.w, err)
}
