// Package gobuild builds the commands that tests run as subprocesses: one
// build at a time among all the go commands that share the build cache
// (dirlock on its folder), and each command once per test binary, or,
// under make test, once per run for all its test binaries.
//
// Two go commands that miss the cache at once both compile what they
// miss, so a package's parallel tests, the packages of one go test run and
// a second clone's suite beside it compiled the same dependencies up to
// six times at once on a fresh machine; in turns the first compiles and
// the others only link. And a link is not cached: go build -o links the
// whole command again for every new output path (mcp-flow: 2.1 CPU-s, its
// build into a path that holds it already 0.3), so the builds of a
// suite's tests, each into a temporary folder of its own, linked a handful
// of commands 154 times (68 CPU-s in link alone, a suite; process
// accounting over a fresh pair of suites side by side). With DirEnv set (make test sets it to a
// folder of its own run, which it removes at the end) a command is built
// once for the run: the first test binary that asks builds it, the others
// find it there.
//
// A test binary that uses Build calls Cleanup when its tests are done
// (TestMain), which removes the binaries Build made outside DirEnv's
// folder. For, which takes a test, needs no Cleanup.
package gobuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-flow/mcp-flow/internal/dirlock"
)

// DirEnv names the environment variable that, when set, names the folder
// of one run's commands (make test: .test-results/bin): the commands built
// there are built once for every test binary of the run, and stay until
// the run removes the folder. The run must not change the code while it
// lasts: a command found there is not built again.
const DirEnv = "MCP_FLOW_GOBUILD_DIR"

var (
	mu     sync.Mutex
	dir    string                // this binary's own folder, made on first use
	made   int                   // the binaries made in it, which number their names
	builds = map[string]*build{} // key → its build
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Build returns the path of the command pkg (an import path, or a
// directory as the go command takes it), built once for this test binary
// (once for the run, with DirEnv set); Cleanup removes it.
func Build(pkg string) (string, error) {
	return BuildWith(keyOf(pkg), func(out string) *exec.Cmd {
		return exec.Command("go", "build", "-o", out, pkg)
	})
}

// For returns the path of the command pkg for t (Path's), and fails t
// if it does not build.
func For(t testing.TB, pkg string) string {
	t.Helper()
	path, err := Path(t, pkg)
	if err != nil {
		t.Fatalf("building %s: %v", pkg, err)
	}
	return path
}

// Path returns the path of the command pkg for t: Build's with DirEnv
// set; without it, built into t's temporary folder, removed when t ends.
func Path(t testing.TB, pkg string) (string, error) {
	return PathWith(t, keyOf(pkg), func(out string) *exec.Cmd {
		return exec.Command("go", "build", "-o", out, pkg)
	})
}

// PathWith is Path for BuildWith's command known by key.
func PathWith(t testing.TB, key string, command func(out string) *exec.Cmd) (string, error) {
	if os.Getenv(DirEnv) != "" {
		return BuildWith(key, command)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(key))
	return path, Run(command(path))
}

// BuildWith is Build for a command that command builds into out (a go
// build with a folder or an environment of its own), known by key: the
// same key is the same command, built once.
func BuildWith(key string, command func(out string) *exec.Cmd) (string, error) {
	mu.Lock()
	b := builds[key]
	if b == nil {
		b = &build{}
		builds[key] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = buildOnce(key, command) })
	return b.path, b.err
}

// buildOnce builds key's command: into DirEnv's folder unless a test
// binary of the run has, or into this binary's own folder.
func buildOnce(key string, command func(out string) *exec.Cmd) (string, error) {
	name := filepath.Base(key)
	if shared := os.Getenv(DirEnv); shared != "" {
		d := filepath.Join(shared, sanitize(key))
		path, done := filepath.Join(d, name), filepath.Join(d, ".built")
		unlock, err := LockCache()
		if err != nil {
			return "", err
		}
		defer unlock()
		if _, err := os.Stat(done); err == nil {
			return path, nil
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
		if err := runLocked(command(path)); err != nil {
			return "", err
		}
		return path, os.WriteFile(done, nil, 0o644)
	}
	mu.Lock()
	if dir == "" {
		d, err := os.MkdirTemp("", "mcp-flow-gobuild-")
		if err != nil {
			mu.Unlock()
			return "", err
		}
		dir = d
	}
	made++
	path := filepath.Join(dir, fmt.Sprintf("%d-%s", made, name))
	mu.Unlock()
	return path, Run(command(path))
}

// keyOf names pkg the same way from every package's tests: an import path
// as it is, a directory by its absolute path.
func keyOf(pkg string) string {
	if strings.HasPrefix(pkg, ".") || filepath.IsAbs(pkg) {
		if abs, err := filepath.Abs(pkg); err == nil {
			return abs
		}
	}
	return pkg
}

// sanitize makes key a folder name.
func sanitize(key string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, strings.TrimPrefix(key, "/"))
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
	return runLocked(cmd)
}

func runLocked(cmd *exec.Cmd) error {
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return nil
}

var gocache struct {
	once sync.Once
	dir  string
	err  error
}

// LockCache waits for the turn to build: a flock on the go command's
// build cache folder (GOCACHE), which every go command that could share
// its work shares.
func LockCache() (unlock func(), err error) {
	gocache.once.Do(func() {
		out, err := exec.Command("go", "env", "GOCACHE").Output()
		if err != nil {
			gocache.err = fmt.Errorf("go env GOCACHE: %w", err)
			return
		}
		gocache.dir = strings.TrimSpace(string(out))
	})
	if gocache.err != nil {
		return nil, gocache.err
	}
	return dirlock.Lock(gocache.dir)
}

// Cleanup removes the binaries Build made outside DirEnv's folder.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir = ""
	}
	builds = map[string]*build{}
}
