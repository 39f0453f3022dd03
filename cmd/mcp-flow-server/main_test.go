package main

import (
	"context"
	"errors"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/gobuild"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
)

// TestSIGTERMDrainsAndExitsZero: a caller calls in a loop, one call after
// the other, while the server gets SIGTERM. Every call is answered (its
// result, or -32006 once $/shutdown has come) and the server exits 0 after
// a clean drain (spec §7.2), 100 times over (as the guide issue asks).
func TestSIGTERMDrainsAndExitsZero(t *testing.T) {
	bin := buildServer(t)
	certDir := t.TempDir()
	iterations := 100
	if testing.Short() {
		iterations = 5
	}
	for i := range iterations {
		proc := exec.Command(bin, "-addr", "127.0.0.1:0", "-cert-dir", certDir, "-root", t.TempDir())
		stderr := &flowtest.SyncBuffer{}
		proc.Stderr = stderr
		stdout, err := proc.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := proc.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		url, hash := flowtest.Announcement(stdout)
		go func() { exited <- proc.Wait() }()
		if url == "" || hash == "" {
			proc.Process.Kill()
			<-exited
			t.Fatalf("iteration %d: no url and hash on stdout; stderr:\n%s", i, stderr)
		}
		tlsConf := flowtest.PinnedTLS(t, hash)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		s, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: tlsConf})
		if err != nil {
			cancel()
			proc.Process.Kill()
			<-exited
			t.Fatalf("iteration %d: Dial: %v; server stderr:\n%s", i, err, stderr)
		}
		answered := make(chan int, 1)
		callErr := make(chan error, 1)
		go func() {
			n := 0
			for {
				_, err := s.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": "x"}})
				switch {
				case err == nil:
					n++
					if n == 3 {
						answered <- n
					}
				case errors.Is(err, flow.ErrShuttingDown):
					callErr <- nil
					return
				default:
					callErr <- err
					return
				}
			}
		}()
		<-answered
		proc.Process.Signal(syscall.SIGTERM)
		err = <-callErr
		var exitErr error
		select {
		case exitErr = <-exited:
		case <-time.After(15 * time.Second):
			proc.Process.Kill()
			<-exited
			t.Fatalf("iteration %d: server still running 15 s after SIGTERM; stderr:\n%s", i, stderr)
		}
		// The server closed the client's session after the drain.
		select {
		case <-s.Done():
		case <-time.After(5 * time.Second):
			t.Errorf("iteration %d: the client session is still open 5 s after the server exited", i)
		}
		s.Close()
		cancel()
		if err != nil {
			t.Fatalf("iteration %d: a call crossing the shutdown got %v, want its result or -32006; server stderr:\n%s", i, err, stderr)
		}
		if exitErr != nil || !strings.Contains(stderr.String(), "shut down cleanly") {
			t.Fatalf("iteration %d: server exit after SIGTERM: %v, want 0 after a clean drain; stderr:\n%s", i, exitErr, stderr)
		}
		var se *flow.SessionError
		if !errors.As(s.Err(), &se) || se.Code != flow.CloseOK {
			t.Fatalf("iteration %d: client session ended with %v, want a clean shutdown", i, s.Err())
		}
	}
}

// TestMaxSessionsFlag: with -max-sessions 1 the server holds one session
// and refuses a second one while the first lasts (HTTP 503, spec §8).
func TestMaxSessionsFlag(t *testing.T) {
	url, hash, stderr, srv := runServer(t, buildServer(t), "-max-sessions", "1")
	defer func() {
		if err := <-srv.signal(syscall.SIGTERM); err != nil {
			t.Errorf("server exit: %v; stderr:\n%s", err, stderr)
		}
	}()
	tlsConf := flowtest.PinnedTLS(t, hash)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet})
	if err != nil {
		t.Fatalf("first session: %v; server stderr:\n%s", err, stderr)
	}
	defer first.Close()
	second, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet})
	if err == nil {
		second.Close()
		t.Fatal("a second session was accepted past -max-sessions 1")
	}
	if !strings.Contains(err.Error(), "503") {
		t.Fatalf("second session refused with %v, want HTTP 503", err)
	}
}

// TestShutdownWithVanishedClient: a client that vanished without ending its
// session (here its path is cut: the relay between them closes, as for a
// client killed with kill -9) leaves a session that the server's drain
// cannot finish until the peer idle timeout ends it. On SIGINT the server
// waits for that, then exits 0, saying it shut down cleanly (before, it
// said "shutdown incomplete" and exited 1, and make run said "Error 1").
func TestShutdownWithVanishedClient(t *testing.T) {
	url, hash, stderr, srv := runServer(t, buildServer(t), "-peer-idle-timeout", "2s", "-keep-alive", "500ms")
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	target, err := net.ResolveUDPAddr("udp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	relay, err := lossrelay.New(lossrelay.Config{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	u.Host = relay.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, u.String(), flow.ClientConfig{TLSConfig: flowtest.PinnedTLS(t, hash), Logger: flowtest.Quiet})
	if err != nil {
		t.Fatalf("Dial through the relay: %v; server stderr:\n%s", err, stderr)
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	relay.Close() // the client is gone, without a word
	select {
	case err := <-srv.signal(syscall.SIGINT):
		if err != nil || !strings.Contains(stderr.String(), "shut down cleanly") || strings.Contains(stderr.String(), "incomplete") {
			t.Fatalf("server exit after SIGINT with a vanished client: %v, want 0 and a clean shutdown; stderr:\n%s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("server still running 20 s after SIGINT (its peer idle timeout is 2 s); stderr:\n%s", stderr)
	}
}

// buildServer builds mcp-flow-server into a temporary directory.
func buildServer(t *testing.T) string {
	t.Helper()
	return gobuild.For(t, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server")
}

// server is a running mcp-flow-server.
type server struct {
	proc   *exec.Cmd
	exited chan error
}

// signal sends sig to the server and returns what gives its exit, once.
func (s *server) signal(sig os.Signal) <-chan error {
	s.proc.Process.Signal(sig)
	return s.exited
}

// runServer starts bin on a free loopback port with a certificate and a
// root of its own and extra flags, and returns its URL and certificate
// hash; the server is killed at the end of the test if it still runs.
func runServer(t *testing.T, bin string, extra ...string) (url, hash string, stderr *flowtest.SyncBuffer, s *server) {
	t.Helper()
	return runServerFiles(t, bin, nil, extra...)
}

// runServerFiles is runServer with files inherited as descriptors 3, 4, …
func runServerFiles(t *testing.T, bin string, files []*os.File, extra ...string) (url, hash string, stderr *flowtest.SyncBuffer, s *server) {
	t.Helper()
	proc := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-cert-dir", t.TempDir(), "-root", t.TempDir()}, extra...)...)
	proc.ExtraFiles = files
	stderr = &flowtest.SyncBuffer{}
	proc.Stderr = stderr
	stdout, err := proc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	s = &server{proc: proc, exited: make(chan error, 1)}
	url, hash = flowtest.Announcement(stdout)
	go func() { s.exited <- proc.Wait() }()
	t.Cleanup(func() { proc.Process.Kill() })
	if url == "" || hash == "" {
		proc.Process.Kill()
		<-s.exited
		t.Fatalf("no url and hash on stdout; stderr:\n%s", stderr)
	}
	return url, hash, stderr, s
}

// TestUpstreamProtocolFlag: -upstream-protocol takes auto, 2026-07-28 or a
// 2025 revision (spec §10, "Eras"); anything else is a usage error (exit 2)
// before anything starts.
func TestUpstreamProtocolFlag(t *testing.T) {
	if code := run([]string{"-addr", "127.0.0.1:0", "-cert-dir", t.TempDir(), "-upstream", "stdio:true", "-upstream-protocol", "2027-01-01"}); code != 2 {
		t.Fatalf("-upstream-protocol 2027-01-01: exit %d, want 2", code)
	}
}
