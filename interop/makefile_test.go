package interop

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestInteropMCPExitStatus runs `make interop-mcp` with a stand-in for the go
// command that prints a passing-looking line and then fails, as a failing
// conformance test does: the make target must fail too (its output goes
// through grep, which must not hide go test's status).
func TestInteropMCPExitStatus(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		need(t, "make", err, nil)
	}
	fake := filepath.Join(t.TempDir(), "go")
	script := "#!/bin/sh\necho '    official MCP conformance suite: 40 passed, 0 failed'\necho '--- FAIL: TestOfficialConformanceSuite'\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-s", "-C", "..", "interop-mcp", "GO="+fake)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("make interop-mcp with a failing go test: err = %v, want a non-zero exit; output:\n%s", err, out)
	}
	t.Logf("make interop-mcp exited %d, as it should; output:\n%s", ee.ExitCode(), out)
}
