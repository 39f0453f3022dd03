package bridge_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKOverMCPFlow: a go-sdk server and a go-sdk client talk over
// MCP-Flow by swapping their transports (bridge.ServeSDK and
// bridge.ClientTransport), in one process, over real QUIC.
func TestGoSDKOverMCPFlow(t *testing.T) {
	t.Parallel()
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	bridge.ServeSDK(&cfg, sdkfixture.NewServer(), flowtest.Quiet)
	srv := flowtest.Serve(t, cfg)
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &bridge.ClientTransport{Config: bridge.StdioConfig{URL: srv.URL(),
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: flowtest.Quiet}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo.Name; got != "sdk-fixture" {
		t.Fatalf("server %q", got)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]string{"text": "ok"}})
	if err != nil || r.Content[0].(*mcp.TextContent).Text != "ok" {
		t.Fatalf("echo: %v", err)
	}
	const n = 2 << 20
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "blob", Arguments: map[string]int{"bytes": n}})
	if err != nil {
		t.Fatal(err)
	}
	img := r.Content[0].(*mcp.ImageContent)
	sum := sha256.Sum256(img.Data)
	if len(img.Data) != n || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(n) {
		t.Fatalf("image: %d bytes", len(img.Data))
	}
}
