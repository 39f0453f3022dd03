package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/draft02/draft02test"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestBridgeStdioDraft02: `mcp-flow bridge stdio` reaches a WebTransport
// draft-02 server (interop/draft02peer, as the v0.1 examples) with the
// default -webtransport auto, as the CLI's commands do: a host initializes
// and calls generate through it. With -webtransport current it cannot, and
// says so in one line naming the flag, and exits 3.
func TestBridgeStdioDraft02(t *testing.T) {
	t.Parallel()
	p := draft02test.Start(t)
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`
	start := func(t *testing.T, args ...string) (io.WriteCloser, *bufio.Reader, *flowtest.SyncBuffer, *exec.Cmd) {
		cmd := exec.Command(cli(t), append(append([]string{"-cert-hash", p.CertHash}, args...), "bridge", "stdio", p.URL)...)
		stderr := &flowtest.SyncBuffer{}
		cmd.Stderr = stderr
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
		return in, bufio.NewReader(out), stderr, cmd
	}
	read := func(t *testing.T, out *bufio.Reader) map[string]json.RawMessage {
		t.Helper()
		line, err := out.ReadString('\n')
		var m map[string]json.RawMessage
		if err != nil || json.Unmarshal([]byte(line), &m) != nil {
			t.Fatalf("stdout %q: %v", line, err)
		}
		return m
	}

	t.Run("auto", func(t *testing.T) {
		in, out, stderr, _ := start(t)
		io.WriteString(in, initialize+"\n")
		if m := read(t, out); m["error"] != nil || !strings.Contains(string(m["result"]), "draft02peer") {
			t.Fatalf("initialize: %s %s; stderr:\n%s", m["result"], m["error"], stderr)
		}
		io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"generate","arguments":{"bytes":5000}}}`+"\n")
		var r struct {
			Content []struct{ Resource struct{ Blob []byte } }
		}
		m := read(t, out)
		if err := json.Unmarshal(m["result"], &r); err != nil || len(r.Content) != 1 || len(r.Content[0].Resource.Blob) != 5000 || r.Content[0].Resource.Blob[4999] != byte(4999%251) {
			t.Fatalf("tools/call generate: %s %s (%v); stderr:\n%s", m["result"], m["error"], err, stderr)
		}
	})

	t.Run("current", func(t *testing.T) {
		in, out, stderr, cmd := start(t, "-webtransport", "current")
		io.WriteString(in, initialize+"\n")
		if m := read(t, out); m["error"] == nil {
			t.Fatalf("initialize in the current dialect: %v", m)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("the bridge did not exit; stderr:\n%s", stderr)
		}
		want := "mcp-flow: bridge: cannot reach the MCP-Flow server " + p.URL + ": the server speaks WebTransport draft-02, as the v0.1 examples do (dial it with -webtransport auto or draft02)\n"
		if code := cmd.ProcessState.ExitCode(); code != exitConnect || !strings.HasSuffix(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 2 {
			t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and, after the transport line, %q", code, stderr, exitConnect, want)
		}
	})
}
