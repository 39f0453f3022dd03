package main

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
)

// TestCLIFallsBack (issue 26): with UDP blocked between the CLI and the
// server (every datagram dropped, TCP open at the same port), `mcp-flow
// -url https://…/mcp-flow call echo text=hi` prints hi through Streamable
// HTTP and says once that it fell back and why; tools, progress and a 64
// MiB stream (downloaded from the server's front, SHA-256 equal) work the
// same; the same URL with UDP open uses MCP-Flow; -transport mcp-flow on
// the blocked network fails (what the CLI did before the fallback).
func TestCLIFallsBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cli, srvBin := build(t, dir, "../mcp-flow"), build(t, dir, "../mcp-flow-server")
	url, hash, _, srvErr := startServer(t, srvBin)
	blocked := flowtest.Behind(t, url, lossrelay.Blocked, lossrelay.Blocked)
	const said = "mcp-flow: streamable-http (no QUIC handshake within 400ms"

	start := time.Now()
	out, errs, code := runCLI(t, cli, "-cert-hash", hash, "-url", blocked, "call", "echo", "text=hi")
	took := time.Since(start)
	if code != 0 || out != "hi\n" || strings.Count(errs, said) != 1 {
		t.Fatalf("call echo through a blocked network: exit %d, stdout %q, stderr:\n%s\nwant hi and one %q; server:\n%s", code, out, errs, said, srvErr)
	}
	t.Logf("echo through the fallback in %v: %s", took.Round(time.Millisecond), strings.TrimSpace(errs))

	if out, errs, code := runCLI(t, cli, "-cert-hash", hash, "-url", blocked, "tools"); code != 0 || !strings.Contains(out, "echo  ") || !strings.Contains(errs, said) {
		t.Fatalf("tools through a blocked network: exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	if out, errs, code := runCLI(t, cli, "-cert-hash", hash, "-url", blocked, "-json", "call", "slow", "steps=3", "delayMs=20"); code != 0 || !strings.Contains(out, `"content"`) {
		t.Fatalf("slow through a blocked network: exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	const n = 64 << 20
	out, errs, code = runCLI(t, cli, "-cert-hash", hash, "-url", blocked, "call", "generate", "bytes=67108864")
	sum := sha256.Sum256([]byte(out))
	if code != 0 || len(out) != n || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(n) {
		t.Fatalf("generate 64 MiB through a blocked network: exit %d, %d bytes, stderr:\n%s", code, len(out), errs)
	}
	// A cancelled call (-timeout) ends at once, as over MCP-Flow.
	start = time.Now()
	_, errs, code = runCLI(t, cli, "-cert-hash", hash, "-url", blocked, "-timeout", "1s", "call", "slow", "steps=100", "delayMs=300")
	t.Logf("the CLI with -timeout 1s exited after %v", time.Since(start))
	// The call runs 30 s uncancelled; the CLI exited after 1.02 s with the
	// 2-core machine at load 10 (2026-12-06).
	if code == 0 || time.Since(start) > 15*time.Second {
		t.Fatalf("slow with -timeout 1s through a blocked network: exit %d after %v, stderr:\n%s", code, time.Since(start), errs)
	}

	out, errs, code = runCLI(t, cli, "-cert-hash", hash, "-url", url, "call", "echo", "text=hi")
	if code != 0 || out != "hi\n" || !strings.Contains(errs, "mcp-flow: mcp-flow (QUIC answered") {
		t.Fatalf("call echo with UDP open: exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	out, errs, code = runCLI(t, cli, "-cert-hash", hash, "-url", blocked, "-transport", "mcp-flow", "-handshake-timeout", "1s", "call", "echo", "text=hi")
	if code != exitConnect || out != "" {
		t.Fatalf("-transport mcp-flow through a blocked network: exit %d, stdout %q, stderr:\n%s; want exit %d", code, out, errs, exitConnect)
	}
	if _, errs, code := runCLI(t, cli, "-url", url, "-transport", "pigeon", "ping"); code != exitUsage || !strings.Contains(errs, "-transport is auto, mcp-flow or streamable-http") {
		t.Fatalf("-transport pigeon: exit %d, stderr:\n%s", code, errs)
	}
}
