package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/gobuild"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// build returns a command of this module built for t (gobuild.For; dir
// is not used).
func build(t *testing.T, dir, pkg string) string {
	t.Helper()
	return gobuild.For(t, pkg)
}

// startServer runs mcp-flow-server as a subprocess on a free port and
// returns its URL and certificate hash, read from its stdout.
func startServer(t *testing.T, bin string) (url, hash string, proc *exec.Cmd, stderr *bytes.Buffer) {
	t.Helper()
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from a file\n"), 0o644)
	proc = exec.Command(bin, "-addr", "127.0.0.1:0", "-cert-dir", t.TempDir(), "-root", root)
	stderr = &bytes.Buffer{}
	proc.Stderr = stderr
	stdout, err := proc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	deadline := time.AfterFunc(20*time.Second, func() { proc.Process.Kill() })
	defer deadline.Stop()
	url, hash = flowtest.Announcement(stdout)
	if url == "" || hash == "" {
		t.Fatalf("server printed no url and hash; stderr:\n%s", stderr)
	}
	go func() { _, _ = bytes.NewBuffer(nil).ReadFrom(stdout) }()
	return url, hash, proc, stderr
}

// announcement reads mcp-flow-server's stdout up to its URL and
// certificate hash.
func announcement(stdout io.Reader) (url, hash string) { return flowtest.Announcement(stdout) }

func runCLI(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("%v: %v", args, err)
	}
	return o.String(), e.String(), code
}

func TestCLIAgainstServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	server := build(t, dir, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server")
	cli := build(t, dir, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
	url, hash, proc, serverErr := startServer(t, server)

	for _, enc := range []string{"json", "cbor", "protobuf"} {
		t.Run(enc, func(t *testing.T) {
			base := []string{"-url", url, "-cert-hash", hash, "-encoding", enc}
			out, errOut, code := runCLI(t, cli, append(base, "ping")...)
			if code != exitOK || !strings.Contains(out, "pong") || !strings.Contains(out, "encoding "+enc) {
				t.Fatalf("ping: exit %d, %q, %q", code, out, errOut)
			}
			out, errOut, code = runCLI(t, cli, append(base, "tools")...)
			for _, tool := range []string{"echo", "generate", "slow", "read_file", "fail_midstream", "ask_sampling"} {
				if code != exitOK || !strings.Contains(out, tool) {
					t.Fatalf("tools: exit %d, %q, %q", code, out, errOut)
				}
			}
			out, _, code = runCLI(t, cli, append(base, "call", "echo", "text=héllo 日本")...)
			if code != exitOK || out != "héllo 日本\n" {
				t.Fatalf("call echo: exit %d, %q", code, out)
			}
			const n = 5 << 20
			out, errOut, code = runCLI(t, cli, append(base, "call", "generate", `{"bytes":5242880}`)...)
			sum := sha256.Sum256([]byte(out[:min(len(out), n)]))
			if code != exitOK || len(out) < n || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(n) {
				t.Fatalf("call generate: exit %d, %d bytes, %q", code, len(out), errOut)
			}
			out, _, code = runCLI(t, cli, append(base, "call", "read_file", "path=hello.txt")...)
			if code != exitOK || !strings.HasPrefix(out, "hello from a file\n") {
				t.Fatalf("read_file: exit %d, %q", code, out)
			}
		})
	}
	base := []string{"-url", url, "-cert-hash", hash}
	t.Run("exit codes", func(t *testing.T) {
		if _, _, code := runCLI(t, cli, append(base, "call", "nope")...); code != exitRemote {
			t.Errorf("unknown tool: exit %d, want %d", code, exitRemote)
		}
		if _, _, code := runCLI(t, cli, append(base, "call", "read_file", "path=../etc/passwd")...); code != exitRemote {
			t.Errorf("path escaping the root: exit %d, want %d", code, exitRemote)
		}
		_, errOut, code := runCLI(t, cli, "-url", url, "-cert-hash", strings.Repeat("00", 32), "ping")
		if code != exitConnect || !strings.Contains(errOut, "cert-hash") {
			t.Errorf("wrong pin: exit %d, %q", code, errOut)
		}
		if _, _, code := runCLI(t, cli, append(base, "frobnicate")...); code != exitUsage {
			t.Errorf("unknown command: exit %d", code)
		}
		outDir := t.TempDir()
		_, errOut, code = runCLI(t, cli, append(base, "-out", outDir, "call", "fail_midstream", "bytes=100000")...)
		files, _ := os.ReadDir(outDir)
		if code != exitStream || len(files) != 0 {
			t.Errorf("failed stream: exit %d, files %v, %q; want %d and no file", code, files, errOut, exitStream)
		}
		_, _, code = runCLI(t, cli, append(base, "-out", outDir, "call", "generate", "bytes=1000")...)
		b, err := os.ReadFile(filepath.Join(outDir, "stream-2-1"))
		if code != exitOK || err != nil || len(b) != 1000 {
			t.Errorf("-out: exit %d, %d bytes, %v", code, len(b), err)
		}
	})

	// SIGINT: graceful shutdown and exit 0.
	proc.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- proc.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("server exit after SIGINT: %v\n%s", err, serverErr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("server did not exit after SIGINT")
	}
	if !strings.Contains(serverErr.String(), "shut down cleanly") {
		t.Fatalf("server stderr:\n%s", serverErr)
	}
}

// TestCLIClosesItsSession: every run of the CLI ends its session before it
// exits, so the server holds none of them afterwards (and not until QUIC's
// 30 s idle timeout), and the goroutines they used are gone.
func TestCLIClosesItsSession(t *testing.T) {
	// Not parallel: it counts the goroutines of this process, where the
	// server runs, and the parallel tests' would count with them.
	cli := build(t, t.TempDir(), "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
	ends := make(chan *flow.SessionError, 16)
	srv := flowtest.Serve(t, flow.ServerConfig{Hooks: flow.Hooks{Closed: func(_ *flow.Session, e *flow.SessionError) { ends <- e }}})
	before := 0
	const runs = 11
	for i := range runs {
		if i == 1 {
			// The first connection starts the server's own loops.
			before = runtime.NumGoroutine()
		}
		out, errOut, code := runCLI(t, cli, "-url", srv.URL(), "-cert-hash", flowtest.Cert.HashHex(), "ping")
		if code != exitOK || !strings.Contains(out, "pong") {
			t.Fatalf("run %d: exit %d, %q, stderr:\n%s", i, code, out, errOut)
		}
		select {
		case e := <-ends:
			if e.Code != flow.CloseOK {
				t.Errorf("run %d: the server's session ended with %v, want a clean shutdown", i, e)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d: the server still holds the session 5 s after the CLI exited (%d open)", i, srv.Sessions())
		}
	}
	if n := srv.Sessions(); n != 0 {
		t.Fatalf("%d sessions open after %d runs", n, runs)
	}
	// The QUIC connections' goroutines end with them; allow a few that
	// belong to nothing of ours (timers of the runtime and test framework).
	deadline := time.Now().Add(5 * time.Second)
	after := runtime.NumGoroutine()
	for ; after > before+2 && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("server goroutines: %d before %d runs, %d after", before, runs-1, after)
	if after > before+2 {
		t.Fatalf("server goroutines: %d before %d runs, %d after", before, runs-1, after)
	}
}

// TestCLIMCPVersion: -mcp-version 2026-07-28 makes the client commands speak
// MCP 2026-07-28 over MCP-Flow (spec §11: $/hello, no initialize, each
// request with its _meta protocol version; ping becomes a server/discover
// round trip), the default speaks 2025-11-25 after initialize, and an
// unknown revision is a usage error (exit 2).
func TestCLIMCPVersion(t *testing.T) {
	t.Parallel()
	cli := build(t, t.TempDir(), "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
	type seen struct{ method, version string }
	got := make(chan seen, 16)
	mux, caps := flowtest.ToolsMux(t, demotools.Config{Root: t.TempDir()})
	srv := flowtest.Serve(t, flow.ServerConfig{Capabilities: caps, Handler: flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		var p struct {
			Meta map[string]string `json:"_meta"`
		}
		_ = json.Unmarshal(req.Params, &p)
		got <- seen{req.Method, p.Meta[protocol.MetaProtocolVersion]}
		return mux.HandleRequest(ctx, req)
	})})
	base := []string{"-url", srv.URL(), "-cert-hash", flowtest.Cert.HashHex()}
	for _, c := range []struct {
		flags   []string
		version string // of the request's _meta
	}{
		{nil, ""},
		{[]string{"-mcp-version", "2026-07-28"}, "2026-07-28"},
	} {
		out, errOut, code := runCLI(t, cli, append(append(base, c.flags...), "call", "echo", "text=hi")...)
		if code != exitOK || strings.TrimSpace(out) != "hi" {
			t.Fatalf("%v call echo: exit %d, %q, stderr:\n%s", c.flags, code, out, errOut)
		}
		if s := <-got; s.method != "tools/call" || s.version != c.version {
			t.Fatalf("%v: the server got %+v, want tools/call with _meta version %q", c.flags, s, c.version)
		}
	}
	out, errOut, code := runCLI(t, cli, append(base, "-mcp-version", "2026-07-28", "ping")...)
	if code != exitOK || !strings.Contains(out, "pong") {
		t.Fatalf("-mcp-version 2026-07-28 ping: exit %d, %q, stderr:\n%s", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, cli, append(base, "-mcp-version", "2027-01-01", "ping")...); code != 2 || !strings.Contains(errOut, "-mcp-version") {
		t.Fatalf("-mcp-version 2027-01-01: exit %d, want 2; stderr:\n%s", code, errOut)
	}
}
