package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
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
// unasked; then resources/updated of the URI given, which the one's listen
// names and the other subscribed to (resources/subscribe); Ctrl-C ends
// each with 0 (spec §11.7).
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
	r26 := start("-mcp-version", protocol.MCP20260728, "listen", demotools.ToggledURI)
	r25 := start("listen", demotools.ToggledURI)
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
		// The 2025 CLI's resources/subscribe goes after its session is up,
		// on its own time (nothing outside says when it is answered): the
		// resource is updated every 100 ms until the line comes (the first
		// time, here).
		stop := make(chan struct{})
		halt := sync.OnceFunc(func() { close(stop) })
		t.Cleanup(halt)
		go func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				srv.ResourceUpdated(demotools.ToggledURI)
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		var u struct {
			Method string
			Params struct{ URI string }
		}
		l := nextLine(t, r.stdout, name+" resources/updated")
		halt()
		if json.Unmarshal([]byte(l), &u) != nil || u.Method != protocol.MethodResourceUpdated || u.Params.URI != demotools.ToggledURI {
			t.Fatalf("%s: line %q, want %s of %s", name, l, protocol.MethodResourceUpdated, demotools.ToggledURI)
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

// TestListenCommandFallback: over the Streamable HTTP fallback, mcp-flow
// listen URI prints the server's tools/list_changed and the URI's
// resources/updated, one JSON line each, and Ctrl-C ends it with 0: in
// 2025-11-25 (a session whose GET stream brings them, the URI subscribed
// with resources/subscribe) and with -mcp-version 2026-07-28 (one
// subscriptions/listen request held open, whose acknowledgement is the
// first line); a 2026-07-28 listen whose server is killed ends at once
// with 3 (spec §11.7).
func TestListenCommandFallback(t *testing.T) {
	t.Parallel()
	bin := cli(t)
	url, hash, srvCmd, srvErr := startServer(t, server(t))
	base := []string{"-url", url, "-cert-hash", hash, "-transport", "streamable-http"}
	start := func(version string) (*exec.Cmd, <-chan string) {
		t.Helper()
		cmd := exec.Command(bin, append(base, "-mcp-version", version, "listen", demotools.ToggledURI)...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, lineReader(t, out)
	}
	// hear toggles until both changes are printed: the listen is made after
	// the CLI's session is up, which nothing outside says (the first toggle
	// usually is heard; one takes about 50 ms here).
	hear := func(version string, lines <-chan string) {
		t.Helper()
		guard := time.After(listenGuard)
		seen := map[string]bool{}
		for !seen[protocol.MethodToolsListChanged] || !seen[protocol.MethodResourceUpdated] {
			if _, errs, code := runCLI(t, bin, "-url", url, "-cert-hash", hash, "call", "toggle"); code != 0 {
				t.Fatalf("toggle: exit %d, stderr:\n%s", code, errs)
			}
			select {
			case l, ok := <-lines:
				var n struct {
					Method string
					Params struct{ URI string }
				}
				if !ok || json.Unmarshal([]byte(l), &n) != nil {
					t.Fatalf("%s: line %q (open %v); server:\n%s", version, l, ok, srvErr)
				}
				switch {
				case n.Method == protocol.MethodToolsListChanged:
				case n.Method == protocol.MethodResourceUpdated && n.Params.URI == demotools.ToggledURI:
				default:
					t.Fatalf("%s: line %q, want %s or %s of %s", version, l, protocol.MethodToolsListChanged, protocol.MethodResourceUpdated, demotools.ToggledURI)
				}
				seen[n.Method] = true
			case <-time.After(100 * time.Millisecond): // not yet: toggle again
			case <-guard:
				t.Fatalf("%s: printed %v in %v, want both changes; server:\n%s", version, seen, listenGuard, srvErr)
			}
		}
	}
	interrupt := func(version string, cmd *exec.Cmd, lines <-chan string) {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		for range lines {
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s: listen over the fallback after Ctrl-C: %v", version, err)
		}
	}
	cmd, lines := start(protocol.MCP20251125)
	hear(protocol.MCP20251125, lines)
	interrupt(protocol.MCP20251125, cmd, lines)

	for _, kill := range []bool{false, true} {
		cmd, lines := start(protocol.MCP20260728)
		select {
		case l := <-lines:
			var ack struct {
				Method string
				Params struct {
					Notifications flow.Subscriptions
				}
			}
			if json.Unmarshal([]byte(l), &ack) != nil || ack.Method != protocol.MethodSubscriptionsAcknowledged ||
				!ack.Params.Notifications.ToolsListChanged || !slices.Equal(ack.Params.Notifications.ResourceSubscriptions, []string{demotools.ToggledURI}) {
				t.Fatalf("%s: first line %q, want %s of tools/list_changed and %s", protocol.MCP20260728, l, protocol.MethodSubscriptionsAcknowledged, demotools.ToggledURI)
			}
		case <-time.After(listenGuard):
			t.Fatalf("%s: no acknowledgement in %v; server:\n%s", protocol.MCP20260728, listenGuard, srvErr)
		}
		if !kill {
			hear(protocol.MCP20260728, lines)
			interrupt(protocol.MCP20260728, cmd, lines)
			continue
		}
		// The server goes away: the listen's stream breaks and the CLI
		// says so with 3 (it took 20 ms here; the guard is a hang guard).
		if err := srvCmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		go func() {
			for range lines {
			}
			ended <- cmd.Wait()
		}()
		select {
		case err := <-ended:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitConnect {
				t.Fatalf("%s: listen after its server was killed: %v, want exit %d", protocol.MCP20260728, err, exitConnect)
			}
		case <-time.After(listenGuard):
			t.Fatalf("%s: listen still running %v after its server was killed", protocol.MCP20260728, listenGuard)
		}
	}
}
