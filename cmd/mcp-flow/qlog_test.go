package main

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
)

// TestQlogDirBinaries: with $QLOGDIR set, mcp-flow-server says so at
// startup, and one `mcp-flow call echo text=hi` leaves one client qlog (the
// CLI's, written before it exits) and one server qlog (written by the time
// the server has stopped) of the same connection.
func TestQlogDirBinaries(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(qlogdir.Env, dir) // the subprocesses inherit it
	url, hash, proc, serverErr := startServer(t, server(t))
	out, errOut, code := runCLI(t, cli(t), "-url", url, "-cert-hash", hash, "call", "echo", "text=hi")
	if code != exitOK || out != "hi\n" {
		t.Fatalf("call echo: exit %d, %q, stderr:\n%s", code, out, errOut)
	}
	if qs := flowtest.ReadQlogs(t, filepath.Join(dir, "*_client.sqlog")); len(qs) != 1 {
		t.Fatalf("want one client qlog, whole, once the CLI has exited: got %v", qs)
	}

	proc.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not stop within 30 s of SIGTERM; stderr:\n%s", serverErr)
	}
	if !strings.Contains(serverErr.String(), "qlog on") || !strings.Contains(serverErr.String(), dir) {
		t.Errorf("the server did not say at startup that qlog is on, in %s; stderr:\n%s", dir, serverErr)
	}
	qs := flowtest.ReadQlogs(t, filepath.Join(dir, "*"))
	if len(qs) != 2 || qs[0].ODCID != qs[1].ODCID || qs[0].Side == qs[1].Side {
		t.Fatalf("want one client and one server qlog of one connection, got %v", qs)
	}
	for _, q := range qs {
		t.Logf("%s: %d events", q.Name, len(q.Events))
		if !slices.Contains(q.Events, "transport:connection_closed") || !slices.Contains(q.Events, "http3:frame_created") {
			t.Errorf("%s: no connection_closed or no HTTP/3 frame: %v", q.Name, q.Events)
		}
	}
}
