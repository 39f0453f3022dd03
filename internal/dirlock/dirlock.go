// Package dirlock takes exclusive flocks on folders, so that test binaries
// of several packages (and of several clones of the repository on one
// machine) that would do the same work at once, an install or a build, do
// it one at a time and find it done. An advisory lock on the folder's own
// descriptor leaves no file behind.
package dirlock

import (
	"fmt"
	"os"
	"syscall"
)

// Lock waits for an exclusive flock on the folder dir and returns its
// release. Without the folder there is nothing to share, and nothing is
// locked.
func Lock(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return func() {}, nil
	}
	if err := LockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock on %s: %w", dir, err)
	}
	return func() {
		Unlock(f)
		f.Close()
	}, nil
}

// LockFile waits for an exclusive flock on f.
func LockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

// Unlock lets f's flock go.
func Unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
