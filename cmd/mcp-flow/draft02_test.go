package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/internal/draft02/draft02test"
)

// TestDraft02Server: the CLI reaches a WebTransport draft-02 server (the
// dialect of the published v0.1 examples) by itself, or when told to, and
// says why it cannot when told to speak only the current dialect.
func TestDraft02Server(t *testing.T) {
	t.Parallel()
	p := draft02test.Start(t)
	cli := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"-url", p.URL, "-cert-hash", p.CertHash, "-encoding", "json"}, args...), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	for _, dialect := range []string{"auto", "draft02"} {
		out, errOut, code := cli("-webtransport", dialect, "ping")
		if code != exitOK || !strings.Contains(out, "pong") {
			t.Fatalf("-webtransport %s ping: exit %d, %q, stderr:\n%s", dialect, code, out, errOut)
		}
	}
	const n = 300_000 // an execution stream past the initial flow-control window
	out, errOut, code := cli("call", "generate", "bytes=300000")
	if code != exitOK || len(out) != n || out[n-1] != byte((n-1)%251) {
		t.Fatalf("call generate: exit %d, %d bytes, stderr:\n%s", code, len(out), errOut)
	}
	// bench dials as call does (it spoke only the current dialect).
	var bout, berr bytes.Buffer
	if code := run([]string{"bench", "-url", p.URL, "-cert-hash", p.CertHash, "-size", "300000", "-rounds", "1", "-calls", "32", "-echo", "generate bytes=10", "-idle", "50ms", "-ping-rate", "20"}, &bout, &berr); code != exitOK || !strings.Contains(bout.String(), p.URL) {
		t.Fatalf("bench: exit %d, %q, stderr:\n%s", code, bout.String(), berr.String())
	}
	out, errOut, code = cli("-webtransport", "current", "ping")
	if code != exitConnect || !strings.Contains(errOut, "stream reset partial delivery") {
		t.Fatalf("-webtransport current: exit %d, %q, stderr:\n%s", code, out, errOut)
	}
}
