package gobuild

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// TestBuildOnce: parallel Builds of one command give one binary, which
// runs; Cleanup removes it; a package that does not build fails with the
// go command's output.
func TestBuildOnce(t *testing.T) {
	const pkg = "github.com/mcp-flow/mcp-flow/internal/slowest"
	paths := make([]string, 4)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Go(func() {
			p, err := Build(pkg)
			if err != nil {
				t.Error(err)
			}
			paths[i] = p
		})
	}
	wg.Wait()
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("one command built to %q and %q", paths[0], p)
		}
	}
	if out, err := exec.Command(paths[0], "-h").CombinedOutput(); !strings.Contains(string(out), "-n") {
		t.Fatalf("the built command: %v\n%s", err, out)
	}
	if _, err := Build("github.com/mcp-flow/mcp-flow/internal/no-such-command"); err == nil || !strings.Contains(err.Error(), "no-such-command") {
		t.Fatalf("a package that is not there: %v", err)
	}
	Cleanup()
	if _, err := os.Stat(paths[0]); !os.IsNotExist(err) {
		t.Fatalf("after Cleanup the binary is still there: %v", err)
	}
}
