package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/gobuild"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(flowtest.UpstreamChildEnv); mode != "" {
		flowtest.UpstreamChild(mode)
		return
	}
	os.Exit(flowtest.LeaveNothing(m.Run))
}

// TestUpstreamFlags: mcp-flow-server -upstream stdio:… with
// -upstream-max-processes 1 refuses a second session with -32005, and on
// SIGTERM it ends its upstream process (which ignores end of input and
// SIGTERM) with SIGKILL after two -upstream-stop-grace, before it exits 0.
func TestUpstreamFlags(t *testing.T) {
	bin := gobuild.For(t, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	proc := exec.Command(bin, "-addr", "127.0.0.1:0", "-cert-dir", t.TempDir(), "-drain", "2s",
		"-upstream", "stdio:"+exe, "-upstream-max-processes", "1", "-upstream-stop-grace", "200ms")
	proc.Env = append(os.Environ(), flowtest.UpstreamChildEnv+"=stubborn")
	stderr := &flowtest.SyncBuffer{}
	proc.Stderr = stderr
	proc.WaitDelay = time.Second // an upstream process left behind would hold stderr open
	stdout, err := proc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	defer func() {
		proc.Process.Kill()
		<-exited
	}()
	url, hash := flowtest.Announcement(stdout)
	pin, err := certs.ParseHash(hash)
	if err != nil {
		t.Fatalf("no certificate hash on stdout (%v); stderr:\n%s", err, stderr)
	}
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{pin}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet})
	if err != nil {
		t.Fatalf("Dial: %v; stderr:\n%s", err, stderr)
	}
	defer s.Close()
	var pid, grandchild int
	if _, err := fmt.Sscanf(s.InitializeResult().ServerInfo.Version, "pid=%d,grandchild=%d", &pid, &grandchild); err != nil {
		t.Fatalf("serverInfo %+v: %v", s.InitializeResult().ServerInfo, err)
	}
	_, err = flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeTooManyRequests {
		t.Fatalf("a second session with -upstream-max-processes 1: %v, want -32005", err)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	proc.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		exited <- err // for the deferred Kill
		// (ErrWaitDelay: the server exited, but something of it, an
		// upstream process left behind, holds its stderr: judged below.)
		if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
			t.Fatalf("server exit after SIGTERM: %v; stderr:\n%s", err, stderr)
		}
	case <-ctx.Done():
		t.Fatalf("server still running after SIGTERM; stderr:\n%s", stderr)
	}
	// The server has exited: its upstream process must be gone already.
	if n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, 0); err != nil || n != 1 {
		t.Fatalf("upstream process %d still running after the server exited (poll %d, %v); server stderr:\n%s", pid, n, err, stderr)
	}
	if !strings.Contains(stderr.String(), "signal=killed") {
		t.Errorf("the server did not say it killed its stubborn upstream; stderr:\n%s", stderr)
	}
}
