package browsertest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/dirlock"
)

// Install steps wait for a lock another installer holds (another clone's
// suite, the system's own apt, a user), and try a failed step once more:
// on a fresh machine both are ordinary, and neither is a fault of the code
// under test.
const (
	// AptLockWait is how long an apt-get step waits for the dpkg or the
	// package lists' lock held by another process.
	AptLockWait = 15 * time.Minute
	// aptLockPoll is how often `apt-get update`, which does not wait for the
	// lists' lock itself (apt 2.6: DPkg::Lock::Timeout covers only dpkg's
	// lock), tries again while another process holds it.
	aptLockPoll = 2 * time.Second
)

// aptLockHeld matches apt's words for a lock another process holds.
var aptLockHeld = regexp.MustCompile(`Could not get lock|Unable to lock|Unable to acquire the dpkg frontend lock`)

// aptInstall installs Debian's package pkg, which brings what (a command, a
// file), unless check finds it there once the suite's other test binaries
// are done installing (they take turns on an flock of the dpkg folder). A
// failure is Need's.
func aptInstall(t testing.TB, what, pkg string, check func() bool) {
	t.Helper()
	unlock, err := lockDir("/var/lib/dpkg")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if check() {
		return
	}
	t.Logf("%s is missing: installing Debian's %s with apt-get", what, pkg)
	if err := aptGet(t.Logf, pkg); err != nil {
		Need(t, "installing "+pkg, err)
	}
}

// InstallDebian installs those of Debian's packages pkgs that are not
// installed yet, taking its turn with the suite's test binaries; for make
// test's set-up (internal/setup).
func InstallDebian(logf func(string, ...any), pkgs ...string) error {
	unlock, err := lockDir("/var/lib/dpkg")
	if err != nil {
		return err
	}
	defer unlock()
	var missing []string
	for _, p := range pkgs {
		out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", p).Output()
		if err != nil || !strings.HasSuffix(string(out), " installed") {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	logf("installing Debian's %s with apt-get", strings.Join(missing, " "))
	return aptGet(logf, missing...)
}

// aptGet runs `apt-get update`, then `apt-get install` of pkgs, each
// waiting up to AptLockWait for a lock held elsewhere and tried once more
// after any other failure.
func aptGet(logf func(string, ...any), pkgs ...string) error {
	lockOpt := fmt.Sprintf("DPkg::Lock::Timeout=%d", int(AptLockWait.Seconds()))
	for _, args := range [][]string{{"update"}, append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)} {
		args = append([]string{"-o", lockOpt, "-o", "Acquire::Retries=3"}, args...)
		if err := aptRetry(logf, args); err != nil {
			return fmt.Errorf("apt-get %s: %w", strings.Join(args, " "), err)
		}
	}
	return nil
}

// aptRetry runs apt-get with args until it succeeds, polling while another
// process holds a lock (for at most AptLockWait) and trying once more after
// any other failure.
func aptRetry(logf func(string, ...any), args []string) error {
	deadline := time.Now().Add(AptLockWait)
	retried := false
	for {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		switch {
		case err == nil:
			return nil
		case aptLockHeld.Match(out) && time.Now().Before(deadline):
			logf("apt-get %s: a lock is held by another process; trying again in %v", strings.Join(args, " "), aptLockPoll)
			time.Sleep(aptLockPoll) // an external process's lock: nothing to wait on but the lock itself
		case !retried:
			retried = true
			logf("apt-get %s failed (%v); trying once more:\n%s", strings.Join(args, " "), err, lastLines(out, 5))
		default:
			return fmt.Errorf("%v\n%s", err, out)
		}
	}
}

// NPMInstall runs `npm args...` in dir (install or ci) when any of markers
// (paths under dir, or absolute) is missing; see InstallNPM. A failure is
// Need's.
func NPMInstall(t testing.TB, dir string, markers []string, args ...string) {
	t.Helper()
	if err := InstallNPM(t.Logf, dir, markers, args...); err != nil {
		Need(t, "npm "+strings.Join(args, " ")+" in "+dir, err)
	}
}

// InstallNPM runs `npm args...` in dir when any of markers (paths under dir,
// or absolute) is missing. Test binaries of several packages install the
// same folders (interop/node serves the interop tests, the CLI's bench test
// and the benchmarks): they take turns on an flock of dir itself (no lock
// file is left behind), and the one that comes second finds the packages
// there. A failed install is tried once more (a registry's transient error,
// a half-written cache); logf says so. What npm installed is kept as a
// copy that a folder with the same package.json, lock file and node links
// instead of running npm again (npmcache.go; NPMCacheEnv).
func InstallNPM(logf func(string, ...any), dir string, markers []string, args ...string) error {
	installed := present(dir, markers)
	if installed() {
		return nil
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	return installNPMLocked(logf, dir, installed, args...)
}

// installNPMLocked is InstallNPM under dir's lock.
func installNPMLocked(logf func(string, ...any), dir string, installed func() bool, args ...string) error {
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("npm (Debian package npm) is missing: %w", err)
	}
	cache, unlock := openNPMCache(logf, dir, args)
	defer unlock()
	if cache != nil {
		linked, err := cache.link(dir)
		switch {
		case err != nil:
			logf("npm folders' copy for %s not linked (%v); running npm", dir, err)
		case linked && installed():
			logf("npm %s in %s: linked from %s", strings.Join(args, " "), dir, cache.dir)
			return nil
		case linked:
			// npm writes files in place: not into the copy's.
			logf("the copy %s lacks what %s needs; running npm", cache.dir, dir)
			if err := os.RemoveAll(filepath.Join(dir, "node_modules")); err != nil {
				return err
			}
		}
	}
	var err error
	for try := 0; try < 2 && !installed(); try++ {
		if try > 0 {
			logf("npm %s in %s failed; trying once more: %v", strings.Join(args, " "), dir, err)
		}
		cmd := exec.Command("npm", args...)
		cmd.Dir = dir
		var out []byte
		if out, err = cmd.CombinedOutput(); err != nil {
			err = fmt.Errorf("%v\n%s", err, lastLines(out, 20))
		}
	}
	if !installed() {
		if err == nil {
			err = fmt.Errorf("npm %s succeeded but what it should install is missing", strings.Join(args, " "))
		}
		return err
	}
	if cache != nil {
		if err := cache.keep(dir); err != nil {
			logf("npm folders' copy of %s not kept: %v", dir, err)
		}
	}
	return nil
}

// present returns whether every one of markers (paths under dir, or
// absolute) exists.
func present(dir string, markers []string) func() bool {
	return func() bool {
		for _, m := range markers {
			if !filepath.IsAbs(m) {
				m = filepath.Join(dir, m)
			}
			if _, err := os.Stat(m); err != nil {
				return false
			}
		}
		return true
	}
}

// lockDir takes an exclusive flock on the folder dir, shared with the test
// binaries of every package (and of another clone of the repository, for
// the dpkg folder), and returns its release (dirlock.Lock).
func lockDir(dir string) (unlock func(), err error) { return dirlock.Lock(dir) }

// lastLines returns the last n lines of out, for a failure's message.
func lastLines(out []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
