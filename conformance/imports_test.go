package conformance

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// module is this module's path.
const module = "github.com/mcp-flow/mcp-flow"

// judged are the packages that implement MCP-Flow, which the judge must not
// share: a mistake in them would then be made by the check that should
// catch it.
var judged = []string{module + "/flow", module + "/bridge", module + "/testtools"}

// TestJudgeImportsNoImplementation: conformance and every package under it
// (test files aside, which run our own peers to be judged) depend on
// nothing of flow, bridge or testtools, directly or not.
func TestJudgeImportsNoImplementation(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-deps", module+"/conformance/...")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	deps := strings.Fields(string(out))
	var bad []string
	listed := false
	for _, d := range deps {
		listed = listed || d == module+"/conformance"
		for _, j := range judged {
			if d == j || strings.HasPrefix(d, j+"/") {
				bad = append(bad, d)
			}
		}
	}
	if !listed {
		t.Fatalf("go list -deps did not list %s/conformance: %s", module, out)
	}
	if len(bad) > 0 {
		t.Errorf("the judge depends on the implementation it judges: %v", bad)
		for _, p := range importers(goBin, bad) {
			t.Log(p)
		}
	}
}

// importers says which packages of the judge's dependencies import each of
// bad, so that a failure names the edge to cut.
func importers(goBin string, bad []string) []string {
	out, err := exec.Command(goBin, "list", "-deps", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, module+"/conformance/...").Output()
	if err != nil {
		return nil
	}
	var lines []string
	for line := range strings.Lines(string(out)) {
		path, imports, _ := strings.Cut(strings.TrimSpace(line), ": ")
		for _, imp := range strings.Fields(imports) {
			for _, b := range bad {
				if imp == b {
					lines = append(lines, path+" imports "+imp)
				}
			}
		}
	}
	return lines
}
