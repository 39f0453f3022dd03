package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/oidctest"
)

// TestCLITokenFile: against mcp-flow-server with -auth-*, `mcp-flow
// -token-file F call whoami` is its token's subject, over MCP-Flow and over
// Streamable HTTP; without a token, or with a bad one, the CLI exits
// non-zero with one stderr line naming 401 and the challenge, never the
// token (docs/spec.md §9.1).
func TestCLITokenFile(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	const audience = "https://mcp-flow.test/mcp-flow"
	url, hash := flowtest.ServerProcess(t, server(t), "-auth-issuer", p.Issuer, "-auth-audience", audience, "-auth-scopes", "mcp:tools")
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	os.WriteFile(good, []byte(p.Token(t, oidctest.TokenOptions{Audience: audience, Scope: "mcp:tools", Subject: "erin"})+"\n"), 0o600)
	bad := filepath.Join(dir, "bad")
	const badToken = "eyJhbGciOiJub25lIn0.e30.not-a-signature"
	os.WriteFile(bad, []byte(badToken), 0o600)
	bin := cli(t)
	base := []string{"-cert-hash", hash, "-url", url}

	for _, transport := range []string{"mcp-flow", "streamable-http"} {
		out, errOut, code := runCLI(t, bin, append(base, "-transport", transport, "-token-file", good, "-json", "call", "whoami")...)
		var res struct {
			StructuredContent demotools.Whoami `json:"structuredContent"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.StructuredContent.Subject != "erin" {
			t.Errorf("%s: whoami with -token-file: exit %d, stdout %q, stderr %q; want subject erin", transport, code, out, errOut)
		}
		t.Logf("%s: whoami: %s", transport, strings.TrimSpace(out))
	}

	for _, c := range []struct {
		name, transport string
		extra           []string
		want            []string
	}{
		{"no token", "mcp-flow", nil, []string{"HTTP 401", `resource_metadata="https://mcp-flow.test/.well-known/oauth-protected-resource/mcp-flow"`}},
		{"no token", "auto", nil, []string{"HTTP 401", `resource_metadata="https://mcp-flow.test/.well-known/oauth-protected-resource/mcp-flow"`}},
		{"bad token", "mcp-flow", []string{"-token-file", bad}, []string{"HTTP 401", `error="invalid_token"`}},
		{"bad token", "streamable-http", []string{"-token-file", bad}, []string{"HTTP 401", `error="invalid_token"`}},
	} {
		args := append(append(append([]string{}, base...), "-transport", c.transport), c.extra...)
		out, errOut, code := runCLI(t, bin, append(args, "call", "whoami")...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		t.Logf("%s over %s: exit %d: %s", c.name, c.transport, code, errOut)
		if code == 0 || out != "" || len(lines) != 1 || strings.Contains(errOut, badToken) || strings.Contains(errOut, "not-a-signature") {
			t.Errorf("%s over %s: exit %d, stdout %q, stderr %q; want a failure, one stderr line, no token", c.name, c.transport, code, out, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s over %s: stderr %q does not name %q", c.name, c.transport, errOut, w)
			}
		}
	}
}
