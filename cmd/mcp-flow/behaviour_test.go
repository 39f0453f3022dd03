//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/gobuild"
)

// The CLI as a user meets it (issue 14): each test runs the built mcp-flow
// binary as a subprocess against a server on loopback, with real pipes, a
// real pseudo-terminal for stderr where terminal behaviour is the point, and
// real signals (syscall.Kill to the child).

var cliBin struct {
	once sync.Once
	path string
	err  error
}

// cli builds mcp-flow once for these tests.
func cli(t *testing.T) string {
	t.Helper()
	cliBin.once.Do(func() {
		cliBin.path, cliBin.err = gobuild.Build("github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
	})
	if cliBin.err != nil {
		t.Fatal(cliBin.err)
	}
	return cliBin.path
}

var serverBin struct {
	once sync.Once
	path string
	err  error
}

// server builds mcp-flow-server once for these tests.
func server(t *testing.T) string {
	t.Helper()
	serverBin.once.Do(func() {
		serverBin.path, serverBin.err = gobuild.Build("github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server")
	})
	if serverBin.err != nil {
		t.Fatal(serverBin.err)
	}
	return serverBin.path
}

func TestMain(m *testing.M) {
	if d := os.Getenv(slowUpstreamEnv); d != "" {
		slowUpstream(d) // this binary is a test's stdio upstream
		return
	}
	os.Exit(flowtest.LeaveNothing(func() int {
		defer gobuild.Cleanup()
		return m.Run()
	}))
}

// toolsServer serves the test tools; each tools/call's handler context
// cause, once the handler returns, goes to ended.
func toolsServer(t *testing.T, extra flow.Mux) (base []string, ended <-chan error) {
	t.Helper()
	mux, caps := flowtest.ToolsMux(t, demotools.Config{Root: t.TempDir()})
	endc := make(chan error, 16)
	tools := mux["tools/call"]
	mux["tools/call"] = flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		var p struct{ Name string }
		_ = json.Unmarshal(req.Params, &p)
		h := tools
		if x, ok := extra[p.Name]; ok {
			h = x
		}
		res, err := h.HandleRequest(ctx, req)
		endc <- context.Cause(ctx)
		return res, err
	})
	srv := flowtest.Serve(t, flow.ServerConfig{Handler: mux, Capabilities: caps, Logger: flowtest.Quiet})
	return []string{"-url", srv.URL(), "-cert-hash", flowtest.Cert.HashHex()}, endc
}

// openPTY opens a pseudo-terminal: the child gets tty as its stderr, the
// test reads what it draws from pty.
func openPTY(t *testing.T) (pty, tty *os.File) {
	t.Helper()
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal here: %v", err)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, pty.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("TIOCGPTN: %v", e)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, pty.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("TIOCSPTLCK: %v", e)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pty.Close(); tty.Close() })
	return pty, tty
}

// screen collects what the child draws on its terminal and signals each
// time it has grown.
type screen struct {
	mu   sync.Mutex
	b    bytes.Buffer
	grew chan struct{}
	done chan struct{}
}

func watch(pty *os.File) *screen {
	s := &screen{grew: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := pty.Read(buf)
			s.mu.Lock()
			s.b.Write(buf[:n])
			s.mu.Unlock()
			select {
			case s.grew <- struct{}{}:
			default:
			}
			if err != nil { // EIO once the child and our copy of tty are gone
				return
			}
		}
	}()
	return s
}

func (s *screen) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// await waits until the screen contains want.
func (s *screen) await(t *testing.T, want string) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for !strings.Contains(s.String(), want) {
		select {
		case <-s.grew:
		case <-s.done:
			if !strings.Contains(s.String(), want) {
				t.Fatalf("the terminal closed without %q; it shows:\n%q", want, s.String())
			}
		case <-deadline.C:
			t.Fatalf("no %q on the terminal in 20 s; it shows:\n%q", want, s.String())
		}
	}
}

// exitCode waits for cmd and returns its exit status.
func exitCode(t *testing.T, cmd *exec.Cmd, errOut fmt.Stringer) int {
	t.Helper()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("mcp-flow did not exit in 20 s; stderr:\n%s", errOut)
	}
	return cmd.ProcessState.ExitCode()
}

// TestStdoutCarriesStreamBytesAlone: `call generate … | sha256sum` hashes
// the stream's bytes, nothing else; the text content goes to stderr.
func TestStdoutCarriesStreamBytesAlone(t *testing.T) {
	t.Parallel()
	base, _ := toolsServer(t, nil)
	const n = 1 << 20
	out, errOut, code := runCLI(t, cli(t), append(base, "call", "generate", fmt.Sprintf("bytes=%d", n))...)
	sum := sha256.Sum256([]byte(out))
	if code != exitOK || len(out) != n || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(n) {
		t.Fatalf("exit %d, %d bytes on stdout (want exactly the %d stream bytes); stderr:\n%s", code, len(out), n, errOut)
	}
	if !strings.Contains(errOut, fmt.Sprintf(`{"bytes":%d,"streams":1}`, n)) {
		t.Fatalf("the result's text content is not on stderr:\n%s", errOut)
	}
	// Without streams, the text is the result and goes to stdout.
	out, errOut, code = runCLI(t, cli(t), append(base, "call", "echo", "text=hi")...)
	if code != exitOK || out != "hi\n" {
		t.Fatalf("echo: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
}

// TestJSONAlone: -json prints the JSON result and nothing else on stdout,
// even when the result has an execution stream (whose size and SHA-256 go
// to stderr).
func TestJSONAlone(t *testing.T) {
	t.Parallel()
	base, _ := toolsServer(t, nil)
	out, errOut, code := runCLI(t, cli(t), append(base, "-json", "call", "generate", "bytes=5000")...)
	var v map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || v["content"] == nil {
		t.Fatalf("exit %d, stdout is not one JSON result: %q; stderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "5000 bytes") || !strings.Contains(errOut, demotools.GenerateSHA256(5000)) {
		t.Fatalf("stderr does not give the stream's size and SHA-256:\n%s", errOut)
	}
	out, errOut, code = runCLI(t, cli(t), append(base, "-json", "tools")...)
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || v["tools"] == nil {
		t.Fatalf("tools -json: exit %d, %q; stderr:\n%s", code, out, errOut)
	}
}

// TestOutNeverOverwrites: a second call's stream goes to a new file; the
// first call's file keeps its bytes.
func TestOutNeverOverwrites(t *testing.T) {
	t.Parallel()
	base, _ := toolsServer(t, nil)
	dir := t.TempDir()
	for _, n := range []int{10, 20, 30} {
		if _, errOut, code := runCLI(t, cli(t), append(base, "-out", dir, "call", "generate", fmt.Sprint("bytes=", n))...); code != exitOK {
			t.Fatalf("bytes=%d: exit %d; stderr:\n%s", n, code, errOut)
		}
	}
	for name, n := range map[string]int{"stream-2-1": 10, "stream-2-1.1": 20, "stream-2-1.2": 30} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || len(b) != n {
			t.Errorf("%s: %d bytes, %v; want %d", name, len(b), err, n)
		}
	}
	if files, _ := os.ReadDir(dir); len(files) != 3 {
		t.Errorf("%d files in -out, want 3 (no .part left)", len(files))
	}
}

// TestToolsShowsArguments: each tool is listed with its arguments' names,
// types and which are required.
func TestToolsShowsArguments(t *testing.T) {
	t.Parallel()
	base, _ := toolsServer(t, nil)
	out, errOut, code := runCLI(t, cli(t), append(base, "tools")...)
	want := "generate  Streams N deterministic bytes"
	i := strings.Index(out, want)
	if code != exitOK || i < 0 {
		t.Fatalf("exit %d, no %q in:\n%s\nstderr:\n%s", code, want, out, errOut)
	}
	for _, arg := range []string{"    bytes=integer, required\n", "    sha256=boolean\n"} {
		if !strings.Contains(out[i:], arg) {
			t.Errorf("generate's argument %q missing:\n%s", arg, out)
		}
	}
}

// TestTimeoutHasItsOwnExit: -timeout expiring during a call exits 5 and
// says so (not "could not connect", 3), and the server's handler is
// cancelled.
func TestTimeoutHasItsOwnExit(t *testing.T) {
	t.Parallel()
	base, ended := toolsServer(t, nil)
	_, errOut, code := runCLI(t, cli(t), append(base, "-timeout", "1s", "call", "slow", "steps=1000", "delayMs=100")...)
	if code != exitTimeout || !strings.Contains(errOut, "-timeout 1s expired while waiting for the result of slow") {
		t.Fatalf("exit %d, want %d with the -timeout message; stderr:\n%s", code, exitTimeout, errOut)
	}
	select {
	case cause := <-ended:
		if cause == nil || !strings.Contains(cause.Error(), "-timeout expired") {
			t.Fatalf("the handler ended with cause %v, want the CLI's $/cancel", cause)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the handler of slow was not cancelled")
	}
}

// TestInterrupt: Ctrl-C during a call with a progress bar on the terminal
// sends $/cancel (the server's handler is cancelled with the CLI's reason),
// clears the bar before saying so, and exits 130.
func TestInterrupt(t *testing.T) {
	t.Parallel()
	base, ended := toolsServer(t, nil)
	pty, tty := openPTY(t)
	cmd := exec.Command(cli(t), append(base, "call", "slow", "steps=100000", "delayMs=20")...)
	cmd.Stderr = tty
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	scr := watch(pty)
	scr.await(t, "] ") // a progress bar is drawn
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd, scr); code != exitInterrupted {
		t.Fatalf("exit %d after Ctrl-C, want %d; terminal:\n%q", code, exitInterrupted, scr)
	}
	select {
	case cause := <-ended:
		if cause == nil || !strings.Contains(cause.Error(), errInterrupted.Error()) {
			t.Fatalf("the handler ended with cause %v, want $/cancel from the interrupt", cause)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server's handler was not cancelled")
	}
	<-scr.done
	s := scr.String()
	i := strings.Index(s, "mcp-flow: interrupted")
	if i < 0 || !strings.HasSuffix(s[:i], "\r\x1b[K") {
		t.Fatalf("the progress line is not cleared before the interrupt message:\n%q", s)
	}
	if strings.Contains(s[i:], "] ") || out.Len() != 0 {
		t.Fatalf("a bar or output after the interrupt: terminal %q, stdout %q", s[i:], out.String())
	}
}

// TestSecondInterruptQuits: when the first Ctrl-C cannot end the CLI (its
// stdout is a pipe nobody reads, and the server has finished, so $/cancel
// changes nothing), a second Ctrl-C exits 130 at once.
func TestSecondInterruptQuits(t *testing.T) {
	t.Parallel()
	const n = 1 << 20 // more than a pipe holds
	blob := flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		w, err := req.OpenStream("application/octet-stream")
		if err != nil {
			return nil, err
		}
		go func() { w.Write(make([]byte, n)); w.Close() }()
		return map[string]any{"content": []any{w.Ref()}}, nil
	})
	base, _ := toolsServer(t, flow.Mux{"blob": blob})
	cmd := exec.Command(cli(t), append(base, "call", "blob")...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	var errOut flowtest.SyncBuffer
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			errOut.Write([]byte(sc.Text() + "\n"))
			lines <- sc.Text()
		}
		close(lines)
	}()
	// One byte read: the CLI is copying the stream to stdout, where it
	// will block, as nobody reads further.
	if _, err := io.ReadFull(stdout, make([]byte, 1)); err != nil {
		t.Fatalf("no stream bytes on stdout: %v; stderr:\n%s", err, errOut.String())
	}
	awaitLine := func(want string) {
		t.Helper()
		for l := range lines {
			if strings.Contains(l, want) {
				return
			}
		}
		t.Fatalf("stderr ended without %q:\n%s", want, errOut.String())
	}
	syscall.Kill(cmd.Process.Pid, syscall.SIGINT)
	awaitLine("Ctrl-C again to quit at once")
	syscall.Kill(cmd.Process.Pid, syscall.SIGINT)
	awaitLine("mcp-flow: quit")
	if code := exitCode(t, cmd, &errOut); code != exitInterrupted {
		t.Fatalf("exit %d after the second Ctrl-C, want %d; stderr:\n%s", code, exitInterrupted, errOut.String())
	}
}

// TestTransferMeter: on a terminal, a transfer shows bytes, rate and ETA
// while it runs (here while stdout is not read, so the line must move on
// its own) and a summary at the end; the bytes on stdout are the stream's
// and nothing else. generate tells the size as progress in bytes (spec
// §6.3), which is where the ETA comes from; a stream whose size nobody told
// gets bytes and rate, and the line says why there is no ETA.
func TestTransferMeter(t *testing.T) {
	t.Parallel()
	const n = 8 << 20
	blob := flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		ref, err := req.StreamFrom(demotools.Generate(n), "application/octet-stream")
		if err != nil {
			return nil, err
		}
		return map[string]any{"content": []any{ref}}, nil
	})
	base, _ := toolsServer(t, flow.Mux{"blob": blob})
	for _, tc := range []struct {
		args       []string
		want, dont string
	}{
		{[]string{"call", "generate", fmt.Sprint("bytes=", n)}, "of 8.0 MiB (", "size unknown"},
		{[]string{"call", "blob"}, "B/s  (size unknown: no ETA)", "ETA "},
	} {
		t.Run(tc.args[1], func(t *testing.T) {
			pty, tty := openPTY(t)
			cmd := exec.Command(cli(t), append(base, tc.args...)...)
			cmd.Stderr = tty
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			tty.Close()
			scr := watch(pty)
			scr.await(t, tc.want) // drawn while stdout is full and unread
			if tc.dont == "size unknown" {
				scr.await(t, "ETA ")
			}
			h := sha256.New()
			got, err := io.Copy(h, stdout)
			if code := exitCode(t, cmd, scr); code != exitOK || err != nil || got != n || hex.EncodeToString(h.Sum(nil)) != demotools.GenerateSHA256(n) {
				t.Fatalf("exit %d, %d bytes on stdout (%v), want exactly the %d stream bytes; terminal:\n%q", code, got, err, n, scr)
			}
			<-scr.done
			s := scr.String()
			if !strings.Contains(s, "mcp-flow: 8.0 MiB in ") {
				t.Fatalf("no summary line on the terminal:\n%q", s)
			}
			if strings.Contains(s, tc.dont) {
				t.Fatalf("the terminal shows %q:\n%q", tc.dont, s)
			}
		})
	}
}
