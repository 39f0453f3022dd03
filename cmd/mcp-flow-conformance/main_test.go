package main

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/conformance"
)

// TestNothingListening: the command says at once that nothing listens,
// one line per check on stderr, and exits 1.
func TestNothingListening(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run([]string{"-url", "https://" + addr + "/mcp", "-insecure"}, &stdout, &stderr)
	d := time.Since(start)
	t.Logf("the run against nothing took %v", d)
	// Under QUIC's 5 s handshake idle timeout, which a dial into silence
	// would wait out: 0.4-9.5 ms measured with the 2-core machine at load
	// 10 (2026-12-06).
	if d > 3*time.Second {
		t.Errorf("took %v", d)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr:\n%s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != len(conformance.ServerChecks()) {
		t.Fatalf("%d lines on stderr for %d checks:\n%s", len(lines), len(conformance.ServerChecks()), stderr.String())
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "FAIL") || !strings.Contains(l, "nothing listens on udp "+addr) {
			t.Errorf("line %q", l)
		}
	}
	if !strings.Contains(stdout.String(), fmt.Sprintf("0 passed, %d failed", len(lines))) {
		t.Errorf("report:\n%s", stdout.String())
	}
}
