package flow_test

import (
	"os/exec"
	"strings"
	"testing"
)

// tokenLibraries are what checking OAuth tokens links (package bearer and
// the libraries under it): flow declares the check it needs
// (flow.Authenticator, flow.TokenInfo) and links none of them, so a user of
// the sessions who checks no tokens does not link them either.
var tokenLibraries = []string{
	"github.com/mcp-flow/mcp-flow/bearer",
	"github.com/coreos/go-oidc",
	"github.com/go-jose",
	"golang.org/x/oauth2",
	"github.com/modelcontextprotocol/go-sdk/auth",
}

// TestFlowLinksNoTokenLibrary: go list -deps of package flow (its test
// files aside, which use bearer) names none of tokenLibraries; a failure
// names the package that imports one.
func TestFlowLinksNoTokenLibrary(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, ".").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps: %v", err)
	}
	listed := false
	for line := range strings.Lines(string(out)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), ": ")
		listed = listed || pkg == "github.com/mcp-flow/mcp-flow/flow"
		for _, imp := range strings.Fields(imports) {
			for _, lib := range tokenLibraries {
				if imp == lib || strings.HasPrefix(imp, lib+"/") {
					t.Errorf("flow links %s: %s imports it", imp, pkg)
				}
			}
		}
	}
	if !listed {
		t.Fatalf("go list -deps did not list package flow:\n%s", out)
	}
}
