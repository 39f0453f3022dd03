package bench

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/draft02"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// The Deno row (issue 39): an MCP server of the official TypeScript SDK v2
// served over MCP-Flow from Deno 2.9 by js/src/server.js
// (js/test/deno-sdk-server.mjs, whose generate writes spec §5.5's bytes on
// execution streams, 64 KiB at a time), measured with this repository's
// client as the flow rows are, in WebTransport draft-02 (Deno's quinn has
// no RESET_STREAM_AT, which the current dialect needs).

// denoTargets starts the Deno server (ended with the benchmark) and
// connects to it, or, when Deno or js/'s npm packages cannot be installed,
// returns none and says why (under CI=true the benchmark fails instead).
func denoTargets(b testing.TB) []struct {
	name string
	t    mcpTarget
} {
	t, err := dialDeno(b)
	if err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal(err)
		}
		b.Logf("no Deno row: %v", err)
		return nil
	}
	return []struct {
		name string
		t    mcpTarget
	}{{"deno-ts-sdk", t}}
}

// denoTarget is the Deno server's session and process (whose CPU time and
// peak RSS BenchmarkLarge counts with this process's).
type denoTarget struct {
	*flowTarget
	pid int
}

func dialDeno(b testing.TB) (*denoTarget, error) {
	certPEM, keyPEM, err := flowtest.Cert.PEM()
	if err != nil {
		return nil, err
	}
	js, _ := filepath.Abs("../js")
	srv, err := browsertest.StartDenoServer(log.Printf, js, "test/deno-sdk-server.mjs", certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	b.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, fmt.Sprintf("https://127.0.0.1:%d/mcp-flow", srv.Port),
		flow.ClientConfig{TLSConfig: pinnedTLS(), Logger: quiet, DialSession: draft02.FlowDialer(pinnedTLS(), nil)})
	if err != nil {
		return nil, fmt.Errorf("dial the Deno server: %w; stderr:\n%s", err, srv.Stderr())
	}
	return &denoTarget{&flowTarget{s}, srv.PID()}, nil
}
