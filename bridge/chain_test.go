package bridge_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestChainGoSDKToGoSDK: go-sdk client → stdio front → MCP-Flow → upstream →
// go-sdk stdio server. The image crosses MCP-Flow on an execution stream and
// arrives as the same image content, byte for byte.
func TestChainGoSDKToGoSDK(t *testing.T) {
	t.Parallel()
	cli := buildCLI(t)
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	fixture := buildBinary(t, "github.com/mcp-flow/mcp-flow/bench/sdkfixture/cmd/sdk-fixture")
	bridge.NewStdioUpstream(bridge.StdioUpstreamConfig{Command: []string{fixture}, Logger: flowtest.Quiet}).Configure(&cfg)
	srv := flowtest.Serve(t, cfg)
	c := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: bridgeCmd(cli, srv)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// Past the upstream's 256 KiB threshold, so that it crosses on an
	// execution stream (3 MiB took 21 s under -race in a pair of suites).
	const n = 1 << 20
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "blob", Arguments: map[string]int{"bytes": n}})
	if err != nil {
		t.Fatal(err)
	}
	img, ok := r.Content[0].(*mcp.ImageContent)
	if !ok {
		t.Fatalf("content %T, want the upstream's image", r.Content[0])
	}
	sum := sha256.Sum256(img.Data)
	if len(img.Data) != n || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(n) || img.MIMEType != "application/octet-stream" {
		t.Fatalf("image: %d bytes, %s", len(img.Data), img.MIMEType)
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]string{"text": "往復"}})
	if err != nil || r.Content[0].(*mcp.TextContent).Text != "往復" {
		t.Fatalf("echo: %v", err)
	}
}
