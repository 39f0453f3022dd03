package conformance

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGuideOnlyClientFailsNoGuideCheck runs a client that follows only the
// guide and the published schema (conformance/internal/guideclient: no
// `datagrams` field, no FIN after $/shutdown): it fails no `guide` check,
// it gets its progress as datagrams although it never asked for them, and
// the one project check it misses is the FIN, graded as the project's.
func TestGuideOnlyClientFailsNoGuideCheck(t *testing.T) {
	bin := buildCmd(t, "github.com/mcp-flow/mcp-flow/conformance/internal/guideclient")
	rs := RunClient(context.Background(), clientTarget(bin), Options{CheckTimeout: 30 * time.Second})
	if len(rs) != len(ClientChecks()) {
		t.Fatalf("%d results for %d checks", len(rs), len(ClientChecks()))
	}
	for _, r := range rs {
		t.Logf("%s (%s): %s: %s", r.ID, r.Source, r.Status, r.Seen)
		switch {
		case r.Source == Guide && r.Status != Pass:
			t.Errorf("guide check %s: %s, want pass: %s", r.ID, r.Status, r.Seen)
		case r.ID == "client.shutdown-fin" && r.Status != Fail:
			t.Errorf("%s: %s, but the guide-only client never sends a FIN: %s", r.ID, r.Status, r.Seen)
		}
		if r.ID == "client.progress" {
			m := regexp.MustCompile(`progress datagrams: (\d+)`).FindStringSubmatch(r.Seen)
			if m == nil {
				t.Fatalf("client.progress: the client did not report its datagrams: %s", r.Seen)
			}
			if n, _ := strconv.Atoi(m[1]); n == 0 {
				t.Errorf("client.progress: the guide-only client got no progress datagram: %s", r.Seen)
			}
		}
	}
}

// TestClientThatExitsZeroWithoutConnecting: /bin/true exits 0 and never
// connects; every check fails, since none has evidence from the client.
func TestClientThatExitsZeroWithoutConnecting(t *testing.T) {
	rs := RunClient(context.Background(), clientTarget("/bin/true"), Options{CheckTimeout: 10 * time.Second})
	everyCheckFails(t, rs, ClientChecks())
	for _, r := range rs {
		if !strings.Contains(r.Seen, "never called") {
			t.Errorf("%s: %s, want the reason that the client never called the tool", r.ID, r.Seen)
		}
	}
}
