package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestMetricsUpstreamStarts (issue 27): with -upstream stdio:… each
// session starts a process of its own, and mcpflow_upstream_starts_total
// counts them: two sessions, two starts, and the echo call of the first is
// the upstream's, counted as the server's. Once both sessions ended, both
// processes are reaped: mcpflow_upstream_processes is back at 0.
func TestMetricsUpstreamStarts(t *testing.T) {
	bin := buildServer(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	proc := exec.Command(bin, "-addr", "127.0.0.1:0", "-cert-dir", t.TempDir(), "-metrics", "127.0.0.1:0",
		"-upstream", "stdio:"+exe, "-upstream-stop-grace", "200ms")
	proc.Env = append(os.Environ(), flowtest.UpstreamChildEnv+"=polite")
	stderr := &flowtest.SyncBuffer{}
	proc.Stderr = stderr
	proc.WaitDelay = time.Second
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
	if url == "" || hash == "" {
		t.Fatalf("no url and hash on stdout; stderr:\n%s", stderr)
	}
	metricsAt := metricsURL(t, stderr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 2 {
		s, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: flowtest.PinnedTLS(t, hash), Logger: flowtest.Quiet})
		if err != nil {
			t.Fatalf("session %d: %v; stderr:\n%s", i, err, stderr)
		}
		if i == 0 {
			if _, err := s.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": "x"}}); err != nil {
				t.Fatalf("echo through the upstream: %v", err)
			}
		}
		if err := s.Shutdown(ctx, "done"); err != nil {
			t.Fatalf("session %d: Shutdown: %v", i, err)
		}
	}
	// A session's end closes its process's stdin and the process exits on
	// its own time (SIGTERM only after -upstream-stop-grace); its exit is
	// reaped on a goroutine of the server's that this test cannot wait on,
	// so waitForSeries polls the scrape, up to its deadline, until the gauge
	// is back at 0 (and the counters complete).
	waitForSeries(t, metricsAt, map[string]float64{
		`mcpflow_upstream_starts_total{kind="start"}`:                                           2,
		`mcpflow_upstream_processes`:                                                            0,
		`mcpflow_sessions_total{role="server"}`:                                                 2,
		`mcpflow_sessions_closed_total{code="0",role="server"}`:                                 2,
		`mcpflow_requests_total{direction="in",method="tools/call",outcome="ok",role="server"}`: 1,
	}, []string{"mcpflow_upstream_starts_total", "mcpflow_upstream_processes", "mcpflow_sessions_total", "mcpflow_sessions_closed_total", "mcpflow_requests_total"})
	proc.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		exited <- err
		if err != nil || !strings.Contains(stderr.String(), "shut down cleanly") {
			t.Fatalf("server exit after SIGTERM: %v; stderr:\n%s", err, stderr)
		}
	case <-ctx.Done():
		t.Fatalf("server still running after SIGTERM; stderr:\n%s", stderr)
	}
}
