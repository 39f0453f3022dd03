package conformance

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/gobuild"
)

func buildCmd(t *testing.T, pkg string) string {
	t.Helper()
	return gobuild.For(t, pkg)
}

func clientTarget(bin string, env ...string) ClientTarget {
	return ClientTarget{Command: []string{bin}, TLS: certs.ServerTLSConfig(flowtest.Cert), CertHash: flowtest.Cert.HashHex(), Env: env}
}

// noFINWait is Options.FINWait for a client that never sends a FIN after
// $/shutdown (the guide-only and draft-02 clients, the no-fin fault): the
// judge waits it out in every check and the verdict is the same however
// long it waits, so a test gives it one second instead of the default 3 s.
// Clients that do send the FIN keep the default.
const noFINWait = time.Second

func failedIDs(rs []Result) []string {
	var out []string
	for _, r := range rs {
		if r.Status == Fail {
			out = append(out, r.ID)
		}
	}
	sort.Strings(out)
	return out
}

// TestOurClientPassesEveryCheck runs the mcp-flow CLI in client mode.
func TestOurClientPassesEveryCheck(t *testing.T) {
	t.Parallel()
	cli := buildCmd(t, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
	rs := RunClient(context.Background(), clientTarget(cli), Options{CheckTimeout: 20 * time.Second})
	if len(rs) != len(ClientChecks()) {
		t.Fatalf("%d results", len(rs))
	}
	for _, r := range rs {
		if r.Status != Pass {
			t.Errorf("%s: %s: %s", r.ID, r.Status, r.Seen)
		}
	}
}

// TestEachClientFaultIsCaught: a hand-written client passes every check as
// it is, and with each fault exactly the checks meant for it fail.
func TestEachClientFaultIsCaught(t *testing.T) {
	t.Parallel()
	bin := buildCmd(t, "github.com/mcp-flow/mcp-flow/conformance/internal/faultyclient")
	for _, tc := range []struct {
		fault string
		want  []string
	}{
		{"", nil},
		{"string-ids", []string{"client.ids", "client.stream"}}, // streams need 32-bit ids
		{"no-switch", []string{"client.cbor"}},
		{"accept-truncated", []string{"client.stream-error"}},
		{"skip-stream", []string{"client.invalid-ref", "client.stream", "client.stream-error"}},
		{"no-ping", []string{"client.ping"}},
		{"no-fin", []string{"client.shutdown-fin"}}, // a project check: the guide asks for no FIN
		{"close-on-audio", []string{"client.audio-log"}},
	} {
		t.Run("fault="+tc.fault, func(t *testing.T) {
			t.Parallel() // each run has its own judge and client process
			o := Options{CheckTimeout: 20 * time.Second}
			if tc.fault == "no-fin" {
				o.FINWait = noFINWait
			}
			rs := RunClient(context.Background(), clientTarget(bin, "MCP_FLOW_FAULT="+tc.fault), o)
			if got := failedIDs(rs); !slices.Equal(got, tc.want) {
				for _, r := range rs {
					t.Logf("%s: %s: %s", r.ID, r.Status, r.Seen)
				}
				t.Fatalf("failed %v, want exactly %v", got, tc.want)
			}
		})
	}
}
