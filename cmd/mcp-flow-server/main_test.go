package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestSIGTERMDrainsAndExitsZero: a caller calls in a loop, one call after
// the other, while the server gets SIGTERM. Every call is answered (its
// result, or -32006 once $/shutdown has come) and the server exits 0 after
// a clean drain (spec §7.2), 100 times over (as the guide issue asks).
func TestSIGTERMDrainsAndExitsZero(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcp-flow-server")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
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
	bin := filepath.Join(t.TempDir(), "mcp-flow-server")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	proc := exec.Command(bin, "-addr", "127.0.0.1:0", "-cert-dir", t.TempDir(), "-root", t.TempDir(), "-max-sessions", "1")
	stderr := &flowtest.SyncBuffer{}
	proc.Stderr = stderr
	stdout, err := proc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		proc.Process.Signal(syscall.SIGTERM)
		if err := proc.Wait(); err != nil {
			t.Errorf("server exit: %v; stderr:\n%s", err, stderr)
		}
	}()
	url, hash := flowtest.Announcement(stdout)
	if url == "" || hash == "" {
		t.Fatalf("no url and hash on stdout; stderr:\n%s", stderr)
	}
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

// TestUpstreamProtocolFlag: -upstream-protocol takes auto, 2026-07-28 or a
// 2025 revision (spec §10, "Eras"); anything else is a usage error (exit 2)
// before anything starts.
func TestUpstreamProtocolFlag(t *testing.T) {
	if code := run([]string{"-addr", "127.0.0.1:0", "-cert-dir", t.TempDir(), "-upstream", "stdio:true", "-upstream-protocol", "2027-01-01"}); code != 2 {
		t.Fatalf("-upstream-protocol 2027-01-01: exit %d, want 2", code)
	}
}
