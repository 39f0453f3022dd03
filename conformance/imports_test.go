package conformance

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this module's path.
const module = "github.com/mcp-flow/mcp-flow"

// judgeMayUse are the only packages of the module outside conformance/ that
// the judge may depend on: the layer below the implementation (names, bytes,
// messages, encodings, the WebTransport seam, certificates, the old dialect,
// qlogs), none of which imports flow. Every other package (flow, bridge and
// its subpackages, bearer, fallback, tools, demotools, metrics, the commands,
// and any package added later) is implementation the judge must not share:
// a mistake in it would then be made by the check that should catch it. A
// package added to this list must share no code with flow (docs/design.md,
// "The judge stands alone").
var judgeMayUse = []string{
	"protocol", "wire", "jsonrpc", "codec", "codec/pb", "wtconn", "certs",
	"internal/draft02", "internal/qlogdir",
}

// TestJudgeImportsNoImplementation: conformance and every package under it
// (test files aside, which run our own peers to be judged) depend on no
// package of the module but those of judgeMayUse, directly or not.
func TestJudgeImportsNoImplementation(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command: %v", err)
	}
	all := strings.Fields(goList(t, goBin, module+"/..."))
	for _, p := range judgeMayUse {
		if !slices.Contains(all, module+"/"+p) {
			t.Errorf("judgeMayUse names %s, which go list ./... does not list: remove it", p)
		}
	}
	deps := strings.Fields(goList(t, goBin, "-deps", module+"/conformance/..."))
	if !slices.Contains(deps, module+"/conformance") {
		t.Fatalf("go list -deps did not list %s/conformance: %v", module, deps)
	}
	var bad []string
	for _, d := range deps {
		rel, ok := strings.CutPrefix(d, module+"/")
		if !ok || rel == "conformance" || strings.HasPrefix(rel, "conformance/") || slices.Contains(judgeMayUse, rel) {
			continue
		}
		bad = append(bad, d)
	}
	if len(bad) > 0 {
		t.Errorf("the judge depends on packages of the implementation it judges (only %v are allowed): %v", judgeMayUse, bad)
		for _, p := range importers(goBin, bad) {
			t.Log(p)
		}
	}
}

// goList runs go list with args and returns its output.
func goList(t *testing.T, goBin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(goBin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %v: %v\n%s", args, err, stderr)
	}
	return string(out)
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
