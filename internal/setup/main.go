// Command setup installs, ahead of the tests that need them, what make
// test's tests would install for themselves when it is missing: Debian's
// browsers, nginx with its stream module and curl (apt-get), and the npm
// folders of the browser peer, the npm package, the TypeScript SDK and
// conformance suite, the OpenID provider and Deno, at their lock files'
// versions. make test runs it in the background while gofmt, go vet and
// the race build (which need none of it) run, so that on a fresh machine
// the downloads overlap the compiling. It takes the same locks as the tests'
// own installs (browsertest), so either may come first; each install waits
// for a lock another installer holds and tries a failure once more. It logs
// to stderr, and exits 1 if anything failed to install (the tests that need
// it then say what is missing).
package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/mcp-flow/mcp-flow/internal/browsertest"
)

// Debian is what the suite installs with apt-get.
var Debian = []string{"chromium", "firefox-esr", "nginx", "libnginx-mod-stream", "curl"}

// npmFolders are the suite's npm folders (relative to the module's root)
// and the npm command that installs each, as its tests run it.
var npmFolders = []struct {
	dir  string
	args []string
}{
	{"browser", []string{"install", "--no-audit", "--no-fund", "--ignore-scripts"}},
	{"js", []string{"install", "--no-audit", "--no-fund", "--ignore-scripts"}},
	{"interop/node", []string{"install", "--no-audit", "--no-fund"}},
	{"internal/oidctest/node", []string{"ci", "--no-audit", "--no-fund", "--ignore-scripts"}},
	{"internal/browsertest/deno", []string{"ci", "--no-audit", "--no-fund", "--ignore-scripts"}},
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("setup: ")
	root, err := browsertest.ModuleDir()
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	fail := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed = append(failed, what)
		log.Printf("%s: %v", what, err)
	}
	wg.Go(func() {
		if err := browsertest.InstallDebian(log.Printf, Debian...); err != nil {
			fail("apt-get", err)
		}
	})
	// The npm folders one after another (npm's cache is one), beside apt.
	wg.Go(func() {
		for _, f := range npmFolders {
			dir := filepath.Join(root, f.dir)
			// npm writes node_modules/.package-lock.json at the end of an
			// install; a folder that has it is installed.
			if err := browsertest.InstallNPM(log.Printf, dir, []string{"node_modules/.package-lock.json"}, f.args...); err != nil {
				fail("npm in "+f.dir, err)
			}
		}
	})
	wg.Wait()
	if len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "setup: not installed: %v\n", failed)
		os.Exit(1)
	}
}
