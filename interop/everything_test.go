package interop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everythingServer serves @modelcontextprotocol/server-everything (stdio)
// over MCP-Flow and returns the server and the arguments that make the CLI
// a stdio front to it.
func everythingServer(t *testing.T) (cli string, args []string) {
	t.Helper()
	node, _ := npmPeers(t)
	dir, _ := filepath.Abs("node")
	everything := filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	bridge.NewStdioUpstream(bridge.StdioUpstreamConfig{Command: []string{node, everything, "stdio"}, Logger: flowtest.Quiet}).Configure(&cfg)
	srv := flowtest.Serve(t, cfg)
	cli = goBuild(t, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
	return cli, []string{"-url", srv.URL(), "-cert-hash", flowtest.Cert.HashHex(), "bridge", "stdio"}
}

// TestServerEverythingThroughMCPFlow: the reference MCP server behind the
// stdio upstream, used through the stdio front by the go-sdk client.
func TestServerEverythingThroughMCPFlow(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("npm peers")
	}
	cli, args := everythingServer(t)
	var progress atomic.Int32
	allProgress := make(chan struct{}) // closed at the fourth update
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-host", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			if progress.Add(1) == 4 {
				close(allProgress)
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(cli, args...)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 10 {
		t.Fatalf("tools/list: %v", err)
	}
	p := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 4}}
	p.SetProgressToken("lro")
	if _, err := cs.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	// Progress notifications may trail the result.
	select {
	case <-allProgress:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d progress notifications, want 4", progress.Load())
	}
	res, err := cs.ListResources(ctx, nil)
	if err != nil || len(res.Resources) == 0 {
		t.Fatalf("resources/list: %v", err)
	}
	if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.Resources[0].URI}); err != nil || len(rr.Contents) == 0 {
		t.Fatalf("resources/read: %v", err)
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) == 0 {
		t.Fatalf("prompts/list: %v", err)
	}
	for _, pr := range prompts.Prompts {
		if len(pr.Arguments) == 0 {
			if g, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: pr.Name}); err != nil || len(g.Messages) == 0 {
				t.Fatalf("prompts/get %s: %v", pr.Name, err)
			}
			break
		}
	}
	// A multi-megabyte result: past the upstream's threshold it crosses
	// MCP-Flow on an execution stream and arrives inline, byte for byte.
	big := strings.Repeat("MCP-Flow ストリーム 0123456789 ", 150_000) // ~4.5 MB
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]string{"message": big}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Content[0].(*mcp.TextContent).Text; got != "Echo: "+big {
		t.Fatalf("echo of %d bytes came back as %d bytes", len(big), len(got))
	}
}

// TestInspectorCLIThroughStdioFront: @modelcontextprotocol/inspector-cli
// uses the stdio front.
func TestInspectorCLIThroughStdioFront(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("npm peers")
	}
	cli, args := everythingServer(t)
	dir, _ := filepath.Abs("node")
	// Known quirk: the inspector reads a package.json in the parent of its
	// package directory.
	quirk := filepath.Join(dir, "node_modules/@modelcontextprotocol/package.json")
	if err := os.WriteFile(quirk, []byte(`{"name":"inspector-quirk","version":"1.0.3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	inspector := filepath.Join(dir, "node_modules/.bin/mcp-inspector-cli")
	run := func(extra ...string) string {
		cmd := exec.Command(inspector, append(append([]string{"--cli", cli}, args...), extra...)...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", extra, err, out)
		}
		return string(out)
	}
	if out := run("--method", "tools/list"); !strings.Contains(out, "trigger-long-running-operation") {
		t.Fatalf("tools/list: %s", out)
	}
	if out := run("--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=inspector"); !strings.Contains(out, "Echo: inspector") {
		t.Fatalf("tools/call: %s", out)
	}
}

// TestContentLengthClient: an MCP client written with vscode-jsonrpc, in
// Content-Length framing, uses the stdio front.
func TestContentLengthClient(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("npm peers")
	}
	node, _ := npmPeers(t)
	cli, args := everythingServer(t)
	cmd := exec.Command(node, append([]string{"lsp-client.mjs", cli}, args...)...)
	cmd.Dir = "node"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("vscode-jsonrpc client: %v\n%s", err, out)
	}
	var r struct {
		ServerInfo struct{ Name string }
		Echo       struct{ Content []struct{ Text string } }
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Echo.Content) == 0 || r.Echo.Content[0].Text != "Echo: 日本語のメッセージ" {
		t.Fatalf("output %s: %v", out, err)
	}
}
