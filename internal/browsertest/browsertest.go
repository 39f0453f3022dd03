// Package browsertest runs pages in headless Chromium, and Firefox, for the
// tests of the browser peer (browser/), the npm package (js/) and the
// inspector (mcp-flow ui). It installs what is missing by the project's own
// files: Debian's chromium and firefox-esr (or another Debian package a
// test runs, such as curl, or nginx and its stream module for
// internal/lbtest) with apt-get, and a folder's npm packages at the
// versions of its package-lock.json. Under CI=true a missing piece fails
// the test; elsewhere the test is skipped, saying what is missing.
package browsertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Need fails the test under CI=true and skips it elsewhere, saying what is
// missing.
func Need(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("skipping: %s: %v", what, err)
}

var aptMu sync.Mutex

// Chromium returns the path of chromium ($CHROMIUM, or on PATH), installing
// Debian's package with apt-get when it is missing.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return Debian(t, "chromium", "chromium")
}

// Debian returns the path of the command name, installing Debian's package
// pkg with apt-get when it is not on PATH (curl, for instance).
func Debian(t testing.TB, name, pkg string) string {
	t.Helper()
	aptMu.Lock()
	defer aptMu.Unlock()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	aptInstall(t, name, pkg, func() bool { _, err := exec.LookPath(name); return err == nil })
	p, err := exec.LookPath(name)
	if err != nil {
		Need(t, name+" after apt-get install "+pkg, err)
	}
	return p
}

// DebianFile returns path, installing Debian's package pkg with apt-get when
// there is no file there: for a package without a command, such as nginx's
// stream module (libnginx-mod-stream, a .so under /usr/lib/nginx/modules).
func DebianFile(t testing.TB, path, pkg string) string {
	t.Helper()
	aptMu.Lock()
	defer aptMu.Unlock()
	if _, err := os.Stat(path); err == nil {
		return path
	}
	aptInstall(t, path, pkg, func() bool { _, err := os.Stat(path); return err == nil })
	if _, err := os.Stat(path); err != nil {
		Need(t, path+" after apt-get install "+pkg, err)
	}
	return path
}

// NPM installs dir's npm packages when marker (a path under dir, such as
// node_modules/playwright-core) is missing, then runs `npm run build`
// unless the build's inputs are those of its last run (buildInputs), both
// under dir's lock (InstallNPM): test binaries of several packages build
// the same folder (js/ serves the browser, closetest, the CLI's inspector
// and its own tests). (npm install, not npm ci: npm 11's ci refuses a lock
// file made on one platform for packages with per-platform optional
// dependencies; install scripts are not needed.)
func NPM(t testing.TB, dir, marker string) {
	t.Helper()
	unlock, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	installed := present(dir, []string{marker})
	if !installed() {
		if err := installNPMLocked(t.Logf, dir, installed, "install", "--no-audit", "--no-fund", "--ignore-scripts"); err != nil {
			Need(t, "npm install in "+dir, err)
		}
	}
	inputs, err := buildInputs(dir)
	if err != nil {
		t.Fatal(err)
	}
	stamp := filepath.Join(dir, "dist", buildStamp)
	if last, err := os.ReadFile(stamp); err == nil && string(last) == inputs {
		return
	}
	os.Remove(stamp)
	Run(t, dir, "npm", "run", "build")
	if err := os.WriteFile(stamp, []byte(inputs), 0o644); err != nil {
		t.Fatal(err)
	}
}

// buildStamp is the file in dist/ (where `npm run build` writes) that
// holds the build's inputs at its last run. A suite's tests asked for the
// same build some 40 times: npm, node and esbuild 30 CPU-s a suite
// (process accounting, a fresh pair of suites side by side).
const buildStamp = ".mcp-flow-build-inputs"

// buildInputs is a digest of what `npm run build` in dir reads: every file
// under dir but the installed packages and the build's output
// (node_modules and dist folders, at any depth), Go files and hidden ones,
// by name and content, and the installed packages' versions
// (node_modules/.package-lock.json).
func buildInputs(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if path != dir && (strings.HasPrefix(name, ".") || d.IsDir() && (name == "node_modules" || name == "dist")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(name, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("the build's inputs in %s: %w", dir, err)
	}
	lock, _ := os.ReadFile(filepath.Join(dir, "node_modules", ".package-lock.json"))
	fmt.Fprintf(h, "lock\x00%d\x00", len(lock))
	h.Write(lock)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Run runs a set-up command in dir; a failure is Need's.
func Run(t testing.TB, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		Need(t, name+" "+strings.Join(args, " ")+" in "+dir, fmt.Errorf("%v\n%s", err, out))
	}
}

// Drive runs `node driver pageURL timeoutMS extra...` in dir with chromium,
// and decodes the one JSON line the driver prints into v. A failure quotes
// the driver's whole stderr.
func Drive(t testing.TB, dir, driver, chromium, pageURL string, timeout time.Duration, v any, extra ...string) {
	t.Helper()
	drive(t, dir, driver, "CHROMIUM="+chromium, pageURL, timeout, v, extra...)
}

// drive runs a driver with env (the browser's path) added to the environment.
func drive(t testing.TB, dir, driver, env, pageURL string, timeout time.Duration, v any, extra ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	args := append([]string{driver, pageURL, fmt.Sprint(timeout.Milliseconds())}, extra...)
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", driver, err, out, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("driver output: %v\n%s\nstderr:\n%s", err, out, stderr.String())
	}
}
