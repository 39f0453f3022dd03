package browsertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestAptWaitsForLock runs the real apt-get update on package lists of its
// own (no sources: nothing is fetched, the machine's lists are not touched)
// while this process holds their lock, as another apt-get would: aptRetry
// must wait for the lock and succeed once it is let go. The lock is let go
// when aptRetry says it is waiting, not after a time; without the wait
// (fail on the first "Could not get lock"), both tries meet the held lock
// and the test fails.
func TestAptWaitsForLock(t *testing.T) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		Need(t, "apt-get (a Debian system)", err)
	}
	dir := t.TempDir()
	lists := filepath.Join(dir, "lists")
	for _, d := range []string{filepath.Join(lists, "partial"), filepath.Join(dir, "cache", "archives", "partial")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := os.OpenFile(filepath.Join(lists, "lock"), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	// apt locks with fcntl (F_SETLK), which conflicts across processes.
	held := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(lock.Fd(), syscall.F_SETLK, &held); err != nil {
		t.Fatal(err)
	}
	var waits int
	var once sync.Once
	logf := func(format string, args ...any) {
		t.Logf(format, args...)
		if strings.Contains(format, "lock is held") {
			waits++
			once.Do(func() {
				free := syscall.Flock_t{Type: syscall.F_UNLCK, Whence: 0}
				if err := syscall.FcntlFlock(lock.Fd(), syscall.F_SETLK, &free); err != nil {
					t.Error(err)
				}
			})
		}
	}
	args := []string{"-o", "Dir::Etc::sourcelist=/dev/null", "-o", "Dir::Etc::sourceparts=/nonexistent",
		"-o", "Dir::State::Lists=" + lists, "-o", "Dir::Cache=" + filepath.Join(dir, "cache"), "update"}
	if err := aptRetry(logf, args); err != nil {
		t.Fatalf("apt-get update with its lists' lock held, then let go: %v", err)
	}
	if waits == 0 {
		t.Fatal("apt-get update succeeded without meeting the held lock: the test held nothing")
	}
}
