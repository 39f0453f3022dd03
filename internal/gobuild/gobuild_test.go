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
	t.Setenv(DirEnv, "") // this binary's own folder, not make test's run's
	t.Cleanup(Cleanup)   // a failure below leaves no binary behind either
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

// TestBuildOncePerRun: with DirEnv set, a command built by one test binary
// of the run is found by the next (here: this binary after forgetting its
// own builds) without a go command: the second build's command is never
// made; a failed build leaves nothing that a later one would take for
// built.
func TestBuildOncePerRun(t *testing.T) {
	shared := t.TempDir()
	t.Setenv(DirEnv, shared)
	forget()
	t.Cleanup(Cleanup)
	const pkg = "github.com/mcp-flow/mcp-flow/internal/slowest"
	commands := 0
	command := func(out string) *exec.Cmd {
		commands++
		return exec.Command("go", "build", "-o", out, pkg)
	}
	first, err := BuildWith(pkg, command)
	if err != nil {
		t.Fatal(err)
	}
	forget()
	second, err := BuildWith(pkg, command)
	if err != nil {
		t.Fatal(err)
	}
	if commands != 1 || second != first {
		t.Fatalf("two binaries of the run: %d go commands, paths %q and %q", commands, first, second)
	}
	if !strings.HasPrefix(first, shared+string(os.PathSeparator)) {
		t.Fatalf("built to %q, not under %s", first, shared)
	}
	if out, err := exec.Command(first, "-h").CombinedOutput(); !strings.Contains(string(out), "-n") {
		t.Fatalf("the built command: %v\n%s", err, out)
	}
	// For, with the variable set, gives the run's binary.
	forget()
	if p := For(t, pkg); p != first {
		t.Fatalf("For: %q, want the run's %q", p, first)
	}

	const bad = "github.com/mcp-flow/mcp-flow/internal/no-such-command"
	for range 2 {
		forget()
		if _, err := Build(bad); err == nil || !strings.Contains(err.Error(), "no-such-command") {
			t.Fatalf("a package that is not there: %v", err)
		}
	}
	Cleanup()
	if _, err := os.Stat(first); err != nil {
		t.Fatalf("Cleanup removed the run's binary (the run removes its folder): %v", err)
	}
}

// forget drops this binary's record of its builds, as a second test
// binary of the run starts without one.
func forget() {
	mu.Lock()
	defer mu.Unlock()
	builds = map[string]*build{}
}
