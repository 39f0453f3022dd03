// Package gobuild builds the commands that tests run as subprocesses: each
// package once per test binary (the tests of a package that run in
// parallel share one binary instead of each linking its own), and one
// build at a time among all the go commands that share the build cache
// (dirlock on its folder). Two go commands that miss the cache at once
// both compile what they miss, so a package's parallel tests, the packages
// of one go test run and a second clone's suite beside it compiled the
// same dependencies up to six times at once on a fresh machine; in turns
// the first compiles and the others only link.
//
// A test binary that uses Build calls Cleanup when its tests are done
// (TestMain), which removes the binaries.
package gobuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mcp-flow/mcp-flow/internal/dirlock"
)

var (
	mu     sync.Mutex
	dir    string                // the binaries' folder, made on first use
	builds = map[string]*build{} // package path → its build
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Build returns the path of the command pkg (an import path, or a
// directory as the go command takes it), built once for this test binary;
// Cleanup removes it.
func Build(pkg string) (string, error) {
	mu.Lock()
	if dir == "" {
		d, err := os.MkdirTemp("", "mcp-flow-gobuild-")
		if err != nil {
			mu.Unlock()
			return "", err
		}
		dir = d
	}
	b := builds[pkg]
	if b == nil {
		b = &build{path: filepath.Join(dir, fmt.Sprintf("%d-%s", len(builds), filepath.Base(pkg)))}
		builds[pkg] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.err = Run(exec.Command("go", "build", "-o", b.path, pkg)) })
	return b.path, b.err
}

// Run runs cmd, a go command that builds, in its turn among the builds
// that share the go command's cache, and returns its failure with its
// output.
func Run(cmd *exec.Cmd) error {
	unlock, err := LockCache()
	if err != nil {
		return err
	}
	defer unlock()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return nil
}

// LockCache waits for the turn to build: a flock on the go command's
// build cache folder (GOCACHE), which every go command that could share
// its work shares.
func LockCache() (unlock func(), err error) {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOCACHE: %w", err)
	}
	return dirlock.Lock(strings.TrimSpace(string(out)))
}

// Cleanup removes the binaries Build made.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir, builds = "", map[string]*build{}
	}
}
