package dirlock

import (
	"os"
	"testing"
	"time"
)

// TestLockTakesTurns: a second Lock of a folder waits until the first is
// released (flock on separate opens excludes within one process as
// between two), and a folder that is not there locks nothing.
func TestLockTakesTurns(t *testing.T) {
	dir := t.TempDir()
	unlock, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		u, err := Lock(dir)
		if err != nil {
			t.Error(err)
			u = func() {}
		}
		got <- u
	}()
	select {
	case u := <-got:
		u()
		t.Fatal("a second lock was taken while the first was held")
	case <-time.After(200 * time.Millisecond): // it waits, as it should
	}
	unlock()
	select {
	case u := <-got:
		u()
	case <-time.After(10 * time.Second): // hang guard: it takes microseconds
		t.Fatal("the second lock still waited 10 s after the first was released")
	}
	if _, err := os.ReadDir(dir); err != nil {
		t.Fatal(err)
	}
	u, err := Lock(dir + "/absent")
	if err != nil {
		t.Fatalf("a missing folder: %v, want nothing locked", err)
	}
	u()
}
