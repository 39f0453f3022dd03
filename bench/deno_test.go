package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
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
	deno, err := browsertest.DenoPath(log.Printf)
	if err != nil {
		return nil, fmt.Errorf("deno: %w", err)
	}
	js, _ := filepath.Abs("../js")
	if err := browsertest.InstallNPM(log.Printf, js, []string{"node_modules/@modelcontextprotocol/server", "node_modules/zod", "node_modules/cbor-x"},
		"install", "--no-audit", "--no-fund", "--ignore-scripts"); err != nil {
		return nil, fmt.Errorf("npm install in js: %w", err)
	}
	dir := b.TempDir()
	certFile, keyFile, err := flowtest.CertFiles(dir)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(deno, "run", "--unstable-net", "--no-prompt", "--allow-net=127.0.0.1", "--allow-read="+dir, "--allow-env",
		"test/deno-sdk-server.mjs", certFile, keyFile)
	cmd.Dir = js
	cmd.Env = append(os.Environ(), "DENO_NO_UPDATE_CHECK=1", "DENO_DIR="+b.TempDir(), "NO_COLOR=1")
	stderr := &flowtest.SyncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	kill := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	kill.Stop()
	var hello struct{ Port int }
	if err != nil || json.Unmarshal([]byte(line), &hello) != nil || hello.Port == 0 {
		return nil, fmt.Errorf("the Deno server said %q (%v); stderr:\n%s", line, err, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, fmt.Sprintf("https://127.0.0.1:%d/mcp-flow", hello.Port),
		flow.ClientConfig{TLSConfig: pinnedTLS(), Logger: quiet, DialSession: draft02.FlowDialer(pinnedTLS(), nil)})
	if err != nil {
		return nil, fmt.Errorf("dial the Deno server: %w; stderr:\n%s", err, stderr)
	}
	return &denoTarget{&flowTarget{s}, cmd.Process.Pid}, nil
}
