package browsertest

import (
	"fmt"
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

// TestNPMCopyLinked installs a folder with the real npm (a dependency packed
// from a folder of the test's own: nothing is fetched), then a second folder
// with the same package.json and package-lock.json: the second gets the
// first's node_modules from the copies (its files are the copy's, hard
// links) without npm; with the copies off, a third runs npm and gets files
// of its own. Without the copies (link never finding one), the second's
// files are its own and the test fails.
func TestNPMCopyLinked(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		Need(t, "npm (Debian package npm)", err)
	}
	root := t.TempDir()
	t.Setenv(NPMCacheEnv, filepath.Join(root, "copies"))
	write := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	npm := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("npm", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm %v in %s: %v\n%s", args, dir, err, out)
		}
	}
	write(filepath.Join(root, "dep", "package.json"), `{"name":"dep","version":"1.0.0","main":"index.js"}`)
	write(filepath.Join(root, "dep", "index.js"), "module.exports = 1;\n")
	npm(filepath.Join(root, "dep"), "pack", "--pack-destination", root)
	pkg := `{"name":"app","version":"1.0.0","private":true,"dependencies":{"dep":"file:../dep-1.0.0.tgz"}}`
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")}
	write(filepath.Join(dirs[0], "package.json"), pkg)
	npm(dirs[0], "install", "--package-lock-only", "--no-audit", "--no-fund")
	lockFile, err := os.ReadFile(filepath.Join(dirs[0], "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs[1:] {
		write(filepath.Join(d, "package.json"), pkg)
		write(filepath.Join(d, "package-lock.json"), string(lockFile))
	}
	marker := []string{"node_modules/dep/index.js"}
	args := []string{"ci", "--no-audit", "--no-fund", "--ignore-scripts"}
	install := func(dir string) (logs string) {
		t.Helper()
		var b strings.Builder
		logf := func(format string, a ...any) {
			t.Logf(format, a...)
			b.WriteString(fmt.Sprintf(format, a...) + "\n")
		}
		if err := InstallNPM(logf, dir, marker, args...); err != nil {
			t.Fatalf("InstallNPM %s: %v", dir, err)
		}
		return b.String()
	}
	same := func(a, b string) bool {
		t.Helper()
		fa, err := os.Stat(filepath.Join(a, marker[0]))
		if err != nil {
			t.Fatal(err)
		}
		fb, err := os.Stat(filepath.Join(b, marker[0]))
		if err != nil {
			t.Fatal(err)
		}
		return os.SameFile(fa, fb)
	}
	if logs := install(dirs[0]); strings.Contains(logs, "linked from") {
		t.Fatalf("the first install was linked from a copy that cannot exist yet:\n%s", logs)
	}
	if logs := install(dirs[1]); !strings.Contains(logs, "linked from") || !same(dirs[0], dirs[1]) {
		t.Fatalf("the second folder, the same package.json and lock file, did not get the first's copy (same file: %v):\n%s", same(dirs[0], dirs[1]), logs)
	}
	t.Setenv(NPMCacheEnv, "off")
	if logs := install(dirs[2]); strings.Contains(logs, "linked from") || same(dirs[0], dirs[2]) {
		t.Fatalf("with %s=off, the third folder got the copy:\n%s", NPMCacheEnv, logs)
	}
}

// TestNPMBuildOnce: NPM runs a folder's `npm run build` (real npm) once
// for the same inputs, again when an input changes, and not for a Go file
// or the build's own output; another spelling of the folder is the same
// folder. The build here counts its runs in dist/.
func TestNPMBuildOnce(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		Need(t, "npm", err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("package.json", `{"name":"stamp-test","version":"1.0.0","private":true,
  "scripts":{"build":"node -e \"const fs=require('fs');fs.mkdirSync('dist',{recursive:true});fs.appendFileSync('dist/runs','x')\""}}`)
	write("src/page.js", "export const a = 1;\n")
	runs := func() int {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "dist", "runs"))
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	NPM(t, dir, "package.json")
	NPM(t, dir, "package.json")
	if n := runs(); n != 1 {
		t.Fatalf("the same inputs built %d times, want 1", n)
	}
	write("x_test.go", "package x\n")
	write("dist/page.js", "built\n")
	NPM(t, dir, "package.json")
	if n := runs(); n != 1 {
		t.Fatalf("a Go file or the build's output started a build: %d runs, want 1", n)
	}
	t.Chdir(dir)
	NPM(t, ".", "package.json")
	if n := runs(); n != 1 {
		t.Fatalf("the folder as . built again: %d runs, want 1", n)
	}
	write("src/page.js", "export const a = 2;\n")
	NPM(t, dir, "package.json")
	if n := runs(); n != 2 {
		t.Fatalf("a changed input: %d runs, want 2", n)
	}
}
