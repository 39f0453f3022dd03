package interop

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

var tsv2TotalRE = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed$`)

// mcpFlowServer runs mcp-flow-server (its built-in test tools, or what
// extra flags such as -upstream say) on a free port and returns its URL and
// certificate hash; it is stopped with the test.
func mcpFlowServer(t *testing.T, extra ...string) (url, hash string) {
	t.Helper()
	return flowtest.ServerProcess(t, goBuild(t, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server"), extra...)
}

// httpFront serves the Streamable HTTP front (package bridge) in front of
// the MCP-Flow server at url, whose certificate's hash is hash, until t
// ends, and returns its endpoint's URL.
func httpFront(t *testing.T, url, hash string) string {
	t.Helper()
	front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: url,
		Client: flow.ClientConfig{TLSConfig: flowtest.PinnedTLS(t, hash), Logger: flowtest.Quiet}, Logger: flowtest.Quiet}})
	ts := httptest.NewServer(front)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := front.Shutdown(ctx); err != nil {
			t.Errorf("HTTP front Shutdown: %v", err)
		}
		ts.Close()
	})
	return ts.URL + "/mcp"
}

// runTSv2 runs interop/tsv2/client.mjs with args and returns its totals.
func runTSv2(t *testing.T, node string, args ...string) (passed, failed int, out []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	script, _ := filepath.Abs("tsv2/client.mjs")
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	out, err := cmd.CombinedOutput()
	m := tsv2TotalRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no totals from the TypeScript SDK v2 client (%v):\n%s", err, out)
	}
	passed, _ = strconv.Atoi(string(m[1]))
	failed, _ = strconv.Atoi(string(m[2]))
	return passed, failed, out
}

// TestOfficialConformanceTSv2Front runs the official TypeScript SDK v2
// client (@modelcontextprotocol/client 2.4.0; interop/tsv2/client.mjs) in
// each era (2026-07-28, pinned: server/discover and stateless requests;
// 2025-11-25: initialize) through each front (the Streamable HTTP front,
// and the stdio front spawned by the client) to mcp-flow-server's built-in
// tools, and requires every check to pass (spec §11.6).
func TestOfficialConformanceTSv2Front(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("npm peers")
	}
	node, _ := npmPeers(t)
	url, hash := mcpFlowServer(t)
	cli := goBuild(t, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
	endpoint := httpFront(t, url, hash)
	report := "TypeScript SDK v2 client 2.4.0 (interop/tsv2/client.mjs) → mcp-flow-server's tools:\n"
	for _, era := range []string{"2026", "2025"} {
		for _, f := range []struct {
			name string
			args []string
		}{
			{"Streamable HTTP front", []string{"--http", endpoint}},
			{"stdio front", []string{"--stdio", cli, "-url", url, "-cert-hash", hash, "bridge", "stdio"}},
		} {
			version := map[string]string{"2026": "2026-07-28", "2025": "2025-11-25"}[era]
			t.Run(version+"/"+f.name, func(t *testing.T) {
				p, n, out := runTSv2(t, node, append([]string{"--era", era}, f.args...)...)
				report += fmt.Sprintf("  %-62s %3d passed, %d failed\n", version+" via the "+f.name+" → MCP-Flow", p, n)
				if n != 0 || p == 0 {
					t.Errorf("%d passed, %d failed:\n%s", p, n, out)
				}
			})
		}
	}
	fmt.Print(report)
}

// TestOfficialConformanceTSv2Chain runs the same TypeScript SDK v2 client
// checks (interop/tsv2/client.mjs --tools tsv2) against the TypeScript SDK
// v2 server (interop/tsv2/server.mjs) directly, and through each front →
// MCP-Flow → mcp-flow-server's stdio upstream → that server (and the HTTP
// front → MCP-Flow → the Streamable HTTP upstream → it), in each era,
// and requires the chain to score what direct scores (issue 15, spec §10
// and §11.6). Two more rows cross eras, which a direct connection cannot:
// a 2026-07-28 client to the server in its 2025-only mode, and a
// 2025-11-25 client to it in its 2026-07-28-only mode; every check must
// pass there too (the upstream translates, spec §10 "Eras").
func TestOfficialConformanceTSv2Chain(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("npm peers")
	}
	node, _ := npmPeers(t)
	script := tsv2Script(t)
	cli := goBuild(t, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
	// chain starts mcp-flow-server with upstream (its -upstream flag) and
	// an HTTP front to it; it returns the client arguments for each front.
	chain := func(t *testing.T, upstream string) (httpArgs, stdioArgs []string) {
		url, hash := mcpFlowServer(t, "-upstream", upstream)
		return []string{"--http", httpFront(t, url, hash)}, []string{"--stdio", cli, "-url", url, "-cert-hash", hash, "bridge", "stdio"}
	}
	report := "TypeScript SDK v2 client 2.4.0 → TypeScript SDK v2 server 2.4.0 (interop/tsv2), the same checks:\n"
	row := func(t *testing.T, label, era string, args []string) (passed int) {
		p, n, out := runTSv2(t, node, append([]string{"--era", era, "--tools", "tsv2"}, args...)...)
		report += fmt.Sprintf("  %-78s %3d passed, %d failed\n", label, p, n)
		if n != 0 || p == 0 {
			t.Errorf("%s: %d passed, %d failed:\n%s", label, p, n, out)
		}
		return p
	}
	for _, era := range []string{"2026", "2025"} {
		version := map[string]string{"2026": "2026-07-28", "2025": "2025-11-25"}[era]
		t.Run(version, func(t *testing.T) {
			direct := row(t, version+" direct (stdio)", era, []string{"--stdio", node, script, "stdio", "both"})
			httpArgs, stdioArgs := chain(t, "stdio:"+node+" "+script+" stdio both")
			for _, f := range []struct {
				name string
				args []string
			}{{"Streamable HTTP front", httpArgs}, {"stdio front", stdioArgs}} {
				if p := row(t, version+" via the "+f.name+" → MCP-Flow → stdio upstream", era, f.args); p != direct {
					t.Errorf("through the %s: %d checks passed, directly %d", f.name, p, direct)
				}
			}
			// Over HTTP the server runs in the era of the row: in "both"
			// the SDK serves 2025 statelessly, so a 2025 client's
			// notifications/cancelled (a POST of its own) reaches a server
			// instance that never saw the request, and the direct row
			// could not count the cancellation.
			endpoint := tsv2HTTP(t, node, map[string]string{"2026": "modern", "2025": "legacy"}[era])
			directHTTP := row(t, version+" direct (Streamable HTTP)", era, []string{"--http", endpoint})
			httpArgs, _ = chain(t, endpoint)
			if p := row(t, version+" via the Streamable HTTP front → MCP-Flow → HTTP upstream", era, httpArgs); p != directHTTP {
				t.Errorf("through the HTTP upstream: %d checks passed, directly %d", p, directHTTP)
			}
		})
	}
	for _, c := range []struct{ era, version, serverEra, server string }{
		{"2026", "2026-07-28", "legacy", "2025-only server"},
		{"2025", "2025-11-25", "modern", "2026-07-28-only server"},
	} {
		t.Run(c.version+"-to-"+c.serverEra, func(t *testing.T) {
			httpArgs, stdioArgs := chain(t, "stdio:"+node+" "+script+" stdio "+c.serverEra)
			row(t, c.version+" via the Streamable HTTP front → MCP-Flow → "+c.server, c.era, httpArgs)
			row(t, c.version+" via the stdio front → MCP-Flow → "+c.server, c.era, stdioArgs)
		})
	}
	fmt.Print(report)
}
