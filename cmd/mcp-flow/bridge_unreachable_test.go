package main

import (
	"bytes"
	"encoding/json"
	"net"
	neturl "net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestBridgeStdioUnreachable: `mcp-flow bridge stdio` whose server cannot
// be reached at all when the host initializes (spec §10, "Reaching the
// server") answers the initialize with the cause, says it in one stderr
// line naming the fix, and exits 3 with its input still open: a port where
// nothing listens (no QUIC answer within the handshake attempt), a server
// whose certificate it does not trust, a URL path with no endpoint (404).
func TestBridgeStdioUnreachable(t *testing.T) {
	t.Parallel()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "https://" + pc.LocalAddr().String() + "/mcp-flow"
	pc.Close() // nothing listens there now
	url, hash := flowtest.ServerProcess(t, server(t))
	wrongPath, _ := neturl.Parse(url)
	wrongPath.Path = "/nope"
	for _, c := range []struct {
		name, url, why, fix string
		args                []string
	}{
		{"nothing-listening", dead, "no QUIC answer within ", "is the server running at " + pc.LocalAddr().String(), []string{"-handshake-timeout", "5s"}},
		{"untrusted-certificate", url, "TLS certificate not trusted", "pass the server's -cert-hash, which mcp-flow-server prints, or -ca", nil},
		{"no-endpoint", wrongPath.String(), "HTTP 404 Not Found", "check the URL's path", []string{"-cert-hash", hash}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(cli(t), append(c.args, "bridge", "stdio", c.url)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer in.Close() // open until the bridge exits by itself
			in.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}` + "\n"))
			start := time.Now()
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("the bridge did not exit in 30 s; stderr:\n%s", stderr.String())
			}
			t.Logf("exit %d after %v", cmd.ProcessState.ExitCode(), time.Since(start).Round(time.Millisecond))
			if code := cmd.ProcessState.ExitCode(); code != exitConnect {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitConnect, stderr.String())
			}
			want := "mcp-flow: bridge: cannot reach the MCP-Flow server " + c.url + ": " + c.why
			var lines []string
			for l := range strings.Lines(stderr.String()) {
				if !strings.HasPrefix(l, "mcp-flow: bridge stdio: ") { // the transport line (issue 26)
					lines = append(lines, strings.TrimSpace(l))
				}
			}
			if len(lines) != 1 || !strings.HasPrefix(lines[0], want) || !strings.Contains(lines[0], c.fix) {
				t.Fatalf("stderr, the transport line aside: %q; want one line %q… naming %q", lines, want, c.fix)
			}
			t.Logf("stderr: %s", lines[0])
			var m struct{ Error struct{ Message string } }
			if err := json.Unmarshal(stdout.Bytes(), &m); err != nil || !strings.Contains(m.Error.Message, c.why) {
				t.Fatalf("stdout %q (%v): want the initialize answered with the cause", stdout.String(), err)
			}
		})
	}
}

// TestBridgeStdioUnreachableGoSDKHost: a go-sdk host (its default version:
// server/discover first, then initialize when that fails) learns why the
// bridge cannot reach its server, a certificate that does not match the
// pinned -cert-hash, from the answer to its request, not "EOF", and the
// bridge exits 3.
func TestBridgeStdioUnreachableGoSDKHost(t *testing.T) {
	t.Parallel()
	url, _ := flowtest.ServerProcess(t, server(t))
	_, err, _, stderr, cmd := stdioHost(t, url, strings.Repeat("00", 32), "")
	if err == nil || !strings.Contains(err.Error(), "cannot reach the MCP-Flow server "+url+": TLS certificate not trusted (pass the server's -cert-hash") {
		t.Fatalf("the host's connect: %v; stderr:\n%s", err, stderr)
	}
	t.Logf("the host got: %v", err)
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != exitConnect {
		t.Fatalf("the bridge: %v, want exit %d; stderr:\n%s", err, exitConnect, stderr)
	}
}
