package running

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
)

// TestWaitSeesAddAfterItStarted: an Add that comes while Wait waits (the
// count back above zero before it reached it) holds Wait until the count
// is zero again; a WaitGroup panics or races there.
func TestWaitSeesAddAfterItStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Count
		c.Add(1)
		done := make(chan error, 1)
		go func() { done <- c.Wait(context.Background()) }()
		synctest.Wait()
		c.Add(1) // a second thing starts while Wait waits
		c.Done()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Wait returned (%v) with one thing still running", err)
		default:
		}
		c.Done()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(context.Background()); err != nil {
			t.Fatalf("Wait on a zero count: %v", err)
		}
	})
}

// TestWaitEndsWithContext: Wait returns the context's cause, and leaves no
// goroutine behind (synctest fails a test whose bubble still has one).
func TestWaitEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Count
		c.Add(1)
		why := errors.New("gave up")
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(why)
		if err := c.Wait(ctx); !errors.Is(err, why) {
			t.Fatalf("Wait with an ended context: %v, want %v", err, why)
		}
		c.Done()
	})
}

// TestNegativeCountPanics: a Done without its Add is a bug, not a count of -1.
func TestNegativeCountPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Done on a zero count did not panic")
		}
	}()
	var c Count
	c.Done()
}
