//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// slowUpstreamEnv makes this test binary a stdio MCP server that answers
// initialize only after the duration it holds (TestMain).
const slowUpstreamEnv = "MCP_FLOW_TEST_SLOW_UPSTREAM"

// slowUpstream is a stdio MCP server (NDJSON) slow to initialize, as a
// first `npx -y …` is while it downloads its package: initialize is
// answered after delay; echo answers its text; other requests get -32601.
func slowUpstream(delay string) {
	d, err := time.ParseDuration(delay)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slow upstream:", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	reply := func(id json.RawMessage, result string) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
		out.Flush()
	}
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || len(m.ID) == 0 {
			continue // notifications need no answer
		}
		switch m.Method {
		case "initialize":
			fmt.Fprintf(os.Stderr, "slow upstream: answering initialize in %v\n", d)
			time.Sleep(d) // the slowness under test
			reply(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"slow","version":"1"}}`)
		case "ping":
			reply(m.ID, `{}`)
		case "tools/call":
			b, _ := json.Marshal(m.Params.Arguments.Text)
			reply(m.ID, `{"content":[{"type":"text","text":`+string(b)+`}]}`)
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", m.ID)
			out.Flush()
		}
	}
}

// TestSlowInitializeFirstCall: with the README's `-upstream 'stdio:npx -y
// …'`, mcp-flow-server waits up to 60 s for its upstream's initialize, and
// the CLI waited 10 s, so the first call failed while the package was being
// downloaded (issue 23). The CLI's default wait is now longer than the
// server's: an upstream that answers initialize after 12 s serves the first
// call, without flags.
func TestSlowInitializeFirstCall(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(slowUpstreamEnv, "12s") // the server and its upstream inherit it
	url, hash, _, _, stderr := liveServer(t, server(t), "-upstream", "stdio:"+self)
	t0 := time.Now()
	out, errOut, code := runCLI(t, cli(t), "-url", url, "-cert-hash", hash, "call", "echo", "text=first call")
	took := time.Since(t0)
	if code != exitOK || strings.TrimSpace(out) != "first call" {
		t.Fatalf("exit %d after %v, %q; CLI stderr:\n%s\nserver stderr:\n%s", code, took, out, errOut, stderr())
	}
	if took < 12*time.Second {
		t.Fatalf("the call took %v: the upstream did not hold initialize for 12 s", took)
	}
	if !strings.Contains(errOut, "waiting for "+url+" to connect and answer initialize (up to -handshake-timeout 1m5s") {
		t.Fatalf("the CLI did not say what it waited for:\n%s", errOut)
	}
}
