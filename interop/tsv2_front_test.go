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

// mcpFlowServer runs mcp-flow-server (its built-in test tools) on a free
// port and returns its URL and certificate hash; it is stopped with the test.
func mcpFlowServer(t *testing.T) (url, hash string) {
	t.Helper()
	bin := goBuild(t, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server")
	dir := t.TempDir()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-cert-dir", dir, "-root", dir)
	stderr := &flowtest.SyncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url, hash = flowtest.Announcement(stdout)
	if url == "" || hash == "" {
		t.Fatalf("mcp-flow-server printed no url and hash; stderr:\n%s", stderr)
	}
	return url, hash
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
	if testing.Short() {
		t.Skip("npm peers")
	}
	node, _ := npmPeers(t)
	url, hash := mcpFlowServer(t)
	cli := goBuild(t, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
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
	report := "TypeScript SDK v2 client 2.4.0 (interop/tsv2/client.mjs) → mcp-flow-server's tools:\n"
	for _, era := range []string{"2026", "2025"} {
		for _, f := range []struct {
			name string
			args []string
		}{
			{"Streamable HTTP front", []string{"--http", ts.URL + "/mcp"}},
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
