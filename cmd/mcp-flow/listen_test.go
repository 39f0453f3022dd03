package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// listenGuard is a hang guard for each line the listen test waits for:
// the CLI connects and prints in under 100 ms here (2 cores, idle).
const listenGuard = 20 * time.Second

// lineReader reads w's lines on a goroutine of its own.
func lineReader(t *testing.T, r io.Reader) <-chan string {
	c := make(chan string, 16)
	go func() {
		defer close(c)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c <- sc.Text()
		}
	}()
	return c
}

// nextLine is the next line on c, or a failure after listenGuard.
func nextLine(t *testing.T, c <-chan string, what string) string {
	t.Helper()
	select {
	case l, ok := <-c:
		if !ok {
			t.Fatalf("output ended before %s", what)
		}
		return l
	case <-time.After(listenGuard):
		t.Fatalf("no %s in %v", what, listenGuard)
		return ""
	}
}

// TestListenCommand: mcp-flow listen prints, one JSON line each on stdout,
// a 2026-07-28 subscription's acknowledgement and the server's
// tools/list_changed, and on a 2025 session the same change as it comes
// unasked; Ctrl-C ends each with 0 (spec §11.7).
func TestListenCommand(t *testing.T) {
	t.Parallel()
	mux, caps := flowtest.ToolsMux(t, demotools.Config{})
	srv := flowtest.Serve(t, flow.ServerConfig{Handler: mux, Capabilities: caps, Logger: flowtest.Quiet})
	base := []string{"-url", srv.URL(), "-cert-hash", flowtest.Cert.HashHex()}
	type run struct {
		cmd            *exec.Cmd
		stdout, stderr <-chan string
	}
	start := func(args ...string) run {
		cmd := exec.Command(cli(t), append(base, args...)...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		errOut, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		return run{cmd, lineReader(t, out), lineReader(t, errOut)}
	}
	r26 := start("-mcp-version", protocol.MCP20260728, "listen")
	r25 := start("listen")
	var ack struct {
		Method string
		Params struct{ Notifications flow.Subscriptions }
	}
	if l := nextLine(t, r26.stdout, "acknowledgement"); json.Unmarshal([]byte(l), &ack) != nil || ack.Method != protocol.MethodSubscriptionsAcknowledged || !ack.Params.Notifications.ToolsListChanged {
		t.Fatalf("first line %q, want the acknowledgement granting toolsListChanged", l)
	}
	// The 2025 CLI says which transport it took once its session is up.
	if l := nextLine(t, r25.stderr, "the transport line"); !strings.HasPrefix(l, "mcp-flow: ") {
		t.Fatalf("2025 listen stderr %q", l)
	}
	if err := srv.ListChanged(protocol.MethodToolsListChanged); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]run{"2026": r26, "2025": r25} {
		var n struct{ Method string }
		if l := nextLine(t, r.stdout, name+" tools/list_changed"); json.Unmarshal([]byte(l), &n) != nil || n.Method != protocol.MethodToolsListChanged {
			t.Fatalf("%s: line %q, want %s", name, l, protocol.MethodToolsListChanged)
		}
		if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		for range r.stdout { // stdout ends with the process
		}
		if err := r.cmd.Wait(); err != nil {
			t.Fatalf("%s: listen after Ctrl-C: %v", name, err)
		}
	}
}
