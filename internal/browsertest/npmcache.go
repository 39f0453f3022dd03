package browsertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/mcp-flow/mcp-flow/internal/dirlock"
)

// The npm folders' shared copies. An npm install of the suite's five folders
// takes about 57 CPU-seconds and 50 s even from npm's own cache (measured
// 2026-12-07 on the 2-core machine: js 16 CPU-s, interop/node 23,
// internal/oidctest/node 12), and every fresh clone of the repository paid
// it, two side by side twice. InstallNPM keeps a copy of each node_modules
// it installed under what decides its content (package.json,
// package-lock.json, npm's arguments, node's version), and a folder with the
// same inputs gets that copy as hard links (cp -al: no file is copied, new
// directories of its own) instead of running npm: about a second.

// NPMCacheEnv names the folder of the copies; "off" turns them off. The
// default is mcp-flow/npm under the user's cache folder (os.UserCacheDir:
// $XDG_CACHE_HOME or ~/.cache). Nothing in it is needed: removing it costs
// the next install its npm run.
const NPMCacheEnv = "MCP_FLOW_NPM_CACHE"

// npmCacheDir returns the folder of the copies, or "" when they are off or
// there is no cache folder.
func npmCacheDir() string {
	switch v := os.Getenv(NPMCacheEnv); v {
	case "off":
		return ""
	case "":
		c, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(c, "mcp-flow", "npm")
	default:
		return v
	}
}

// npmCacheKey names the copy of dir's node_modules that `npm args...` makes:
// a hash of dir's package.json and package-lock.json (when there is one),
// args and `node --version`, which decides what an install builds.
func npmCacheKey(dir string, args []string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if errors.Is(err, fs.ErrNotExist) && f == "package-lock.json" {
			continue
		}
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	v, err := exec.Command("node", "--version").Output()
	if err != nil {
		return "", fmt.Errorf("node --version: %w", err)
	}
	fmt.Fprintf(h, "node %s\nargs %q\n", bytes.TrimSpace(v), args)
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// npmCache is one copy: its folder and the lock that installers of the same
// inputs (another clone's suite) take turns on.
type npmCache struct {
	dir string // <cache>/<key>: node_modules in it once complete
}

// openNPMCache returns the copy for `npm args...` in dir, locked (unlock
// releases it), or nil when copies are off or cannot be kept (why is
// logged).
func openNPMCache(logf func(string, ...any), dir string, args []string) (c *npmCache, unlock func()) {
	root := npmCacheDir()
	if root == "" {
		return nil, func() {}
	}
	key, err := npmCacheKey(dir, args)
	if err == nil {
		err = os.MkdirAll(root, 0o755)
	}
	var lock *os.File
	if err == nil {
		lock, err = os.OpenFile(filepath.Join(root, key+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	}
	if err == nil {
		if err = dirlock.LockFile(lock); err != nil {
			lock.Close()
		}
	}
	if err != nil {
		logf("npm folders' copies (%s) not used for %s: %v", root, dir, err)
		return nil, func() {}
	}
	return &npmCache{dir: filepath.Join(root, key)}, func() { dirlock.Unlock(lock); lock.Close() }
}

// link gives dir the copy's node_modules as hard links and reports whether
// it did (false: there is no complete copy). A node_modules dir had
// already (half an install) is removed first.
func (c *npmCache) link(dir string) (bool, error) {
	src := filepath.Join(c.dir, "node_modules")
	if _, err := os.Stat(src); err != nil {
		return false, nil
	}
	dst := filepath.Join(dir, "node_modules")
	if err := os.RemoveAll(dst); err != nil {
		return false, err
	}
	if out, err := exec.Command("cp", "-al", src, dst).CombinedOutput(); err != nil {
		_ = os.RemoveAll(dst)
		return false, fmt.Errorf("cp -al %s %s: %v\n%s", src, dst, err, lastLines(out, 5))
	}
	return true, nil
}

// keep makes dir's node_modules, just installed, the copy: linked into a
// folder of its own, which is renamed into place once complete (a copy
// that exists is whole).
func (c *npmCache) keep(dir string) error {
	tmp := c.dir + ".tmp" + strconv.Itoa(os.Getpid())
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-al", filepath.Join(dir, "node_modules"), filepath.Join(tmp, "node_modules")).CombinedOutput(); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("cp -al: %v\n%s", err, lastLines(out, 5))
	}
	_ = os.RemoveAll(c.dir) // an incomplete copy cannot be there; a stale one can go
	if err := os.Rename(tmp, c.dir); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	return nil
}
