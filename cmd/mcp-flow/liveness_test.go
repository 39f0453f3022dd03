package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/quic-go/quic-go"
)

// liveServer runs mcp-flow-server -debug with extra flags and returns its
// URL, its certificate hash, and a channel that gets a value each time it
// logs "session ready". All its stderr is kept for failure messages.
func liveServer(t *testing.T, bin string, flags ...string) (url, hash string, proc *exec.Cmd, ready <-chan struct{}, stderr func() string) {
	t.Helper()
	args := append([]string{"-addr", "127.0.0.1:0", "-cert-dir", t.TempDir(), "-root", t.TempDir(), "-debug"}, flags...)
	proc = exec.Command(bin, args...)
	out, err := proc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := proc.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log strings.Builder
	readyc := make(chan struct{}, 16)
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), `msg="session ready"`) {
				select {
				case readyc <- struct{}{}:
				default:
				}
			}
		}
	}()
	stderr = func() string { mu.Lock(); defer mu.Unlock(); return log.String() }
	t.Cleanup(func() { proc.Process.Kill(); <-stderrDone; proc.Wait() })
	if url, hash = flowtest.Announcement(out); url == "" || hash == "" {
		t.Fatalf("server printed no url and hash; stderr:\n%s", stderr())
	}
	go io.Copy(io.Discard, out)
	return url, hash, proc, readyc, stderr
}

// kill SIGKILLs the server and waits until it is gone.
func kill(t *testing.T, proc *exec.Cmd) time.Time {
	t.Helper()
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	proc.Process.Wait()
	return time.Now()
}

// TestDeadServerNoticed: a client learns that its server was killed
// (SIGKILL: no CONNECTION_CLOSE, no $/shutdown) within the QUIC idle
// timeout, set by either side (Limits.PeerIdleTimeout; -peer-idle-timeout on
// both commands; spec §8), not the 30 s of before. quic-go takes the peer's
// value as 5 s at least, so a server's 1 s makes its clients notice in 5 s;
// the client's own 1 s, in 1 s.
func TestDeadServerNoticed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srvBin := build(t, dir, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server")
	cliBin := build(t, dir, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
	const idle = time.Second
	// The slack is for a loaded machine (quic-go waits at least 3 PTOs).
	const slack = 3 * time.Second

	session := func(t *testing.T, url, hash string, lim flow.Limits) *flow.Session {
		t.Helper()
		tlsConf, err := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{mustHash(t, hash)}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		s, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: tlsConf, Limits: lim})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	noticed := func(t *testing.T, s *flow.Session, idle time.Duration, killed time.Time, stderr func() string) {
		t.Helper()
		select {
		case <-s.Done():
		case <-time.After(30 * time.Second):
			t.Fatalf("the session outlived its killed server by 30 s; server stderr:\n%s", stderr())
		}
		took := time.Since(killed)
		if s.Err() == nil {
			t.Error("the session ended with no error")
		}
		var ite *quic.IdleTimeoutError
		t.Logf("session ended %v after SIGKILL: %v (quic.IdleTimeoutError reachable: %v)", took, s.Err(), errors.As(s.Err(), &ite))
		if took > idle+slack {
			t.Errorf("the session ended %v after SIGKILL, later than %v (idle timeout %v)", took, idle+slack, idle)
		}
	}

	t.Run("server flag", func(t *testing.T) {
		t.Parallel()
		url, hash, proc, _, stderr := liveServer(t, srvBin, "-peer-idle-timeout", idle.String(), "-keep-alive", "250ms")
		s := session(t, url, hash, flow.Limits{}) // the client's default: 10 s
		// quic-go takes a peer's idle timeout as 5 s at least.
		noticed(t, s, 5*time.Second, kill(t, proc), stderr)
	})
	t.Run("defaults", func(t *testing.T) {
		// Nothing set on either side: a killed server is noticed within
		// PeerIdleTimeout + KeepAlivePeriod (10 s, spec §8), with code 7 and
		// words that say so.
		t.Parallel()
		url, hash, proc, _, stderr := liveServer(t, srvBin)
		s := session(t, url, hash, flow.Limits{})
		noticed(t, s, flow.DefaultPeerIdleTimeout+flow.DefaultKeepAlivePeriod-slack+time.Second, kill(t, proc), stderr)
		var se *flow.SessionError
		if !errors.As(s.Err(), &se) || se.Code != flow.CloseConnectionLost || !strings.Contains(s.Err().Error(), "peer gone") || strings.Contains(s.Err().Error(), "closed by the peer") {
			t.Errorf("a killed server reported as %v, want code %d, peer gone, noticed here", s.Err(), flow.CloseConnectionLost)
		}
	})
	t.Run("client limit", func(t *testing.T) {
		t.Parallel()
		url, hash, proc, _, stderr := liveServer(t, srvBin)
		s := session(t, url, hash, flow.Limits{PeerIdleTimeout: idle, KeepAlivePeriod: 250 * time.Millisecond})
		noticed(t, s, idle, kill(t, proc), stderr)
	})
	t.Run("mcp-flow flag", func(t *testing.T) {
		t.Parallel()
		url, hash, proc, ready, stderr := liveServer(t, srvBin)
		cli := exec.Command(cliBin, "-url", url, "-cert-hash", hash, "-peer-idle-timeout", idle.String(), "-keep-alive", "250ms",
			"call", "slow", `{"steps":10000,"delayMs":100}`)
		var cliOut, cliErr strings.Builder
		cli.Stdout, cli.Stderr = &cliOut, &cliErr
		if err := cli.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cli.Wait() }()
		t.Cleanup(func() { cli.Process.Kill(); <-exited })
		select {
		case <-ready:
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("mcp-flow exited before its session was ready: %v\nstdout:\n%s\nstderr:\n%s\nserver stderr:\n%s", err, cliOut.String(), cliErr.String(), stderr())
		}
		killed := kill(t, proc)
		var err error
		select {
		case err = <-exited:
			exited <- err
		case <-time.After(30 * time.Second):
			t.Fatalf("mcp-flow outlived its killed server by 30 s; its stderr:\n%s", cliErr.String())
		}
		took := time.Since(killed)
		t.Logf("mcp-flow exited %v after SIGKILL (%v); stderr: %s", took, err, cliErr.String())
		if err == nil {
			t.Errorf("mcp-flow exited 0 although its server was killed; stdout:\n%s", cliOut.String())
		}
		if took > idle+slack {
			t.Errorf("mcp-flow exited %v after SIGKILL, later than %v (idle timeout %v); stderr:\n%s", took, idle+slack, idle, cliErr.String())
		}
	})
}

func mustHash(t *testing.T, s string) [32]byte {
	t.Helper()
	h, err := certs.ParseHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
