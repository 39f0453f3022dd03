package conformance

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/draft02/draft02test"
)

// TestGuideOnlyClientFailsNoGuideCheck runs a client that follows only the
// guide and the published schema (conformance/internal/guideclient: no
// `datagrams` field, no FIN after $/shutdown): it fails no `guide` check,
// it gets its progress, audio and logs as datagrams although it never asked
// for them, and the one project check it misses is the FIN, graded as the
// project's.
func TestGuideOnlyClientFailsNoGuideCheck(t *testing.T) {
	t.Parallel()
	bin := buildCmd(t, "github.com/mcp-flow/mcp-flow/conformance/internal/guideclient")
	rs := RunClient(context.Background(), clientTarget(bin), Options{CheckTimeout: 30 * time.Second, FINWait: noFINWait})
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
		// The datagrams the check is about reached the client.
		for id, kinds := range map[string][]string{"client.progress": {"progress"}, "client.audio-log": {"audio", "log"}} {
			if r.ID != id {
				continue
			}
			for _, kind := range kinds {
				m := regexp.MustCompile(kind + ` datagrams: (\d+)`).FindStringSubmatch(r.Seen)
				if m == nil {
					t.Fatalf("%s: the client did not report its %s datagrams: %s", id, kind, r.Seen)
				}
				if n, _ := strconv.Atoi(m[1]); n == 0 {
					t.Errorf("%s: the guide-only client got no %s datagram: %s", id, kind, r.Seen)
				}
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

// TestDraft02ClientIsJudged: a client on webtransport-go v0.6 (WebTransport
// draft-02, as the published v0.1 example client is) reaches the judge,
// whose webtransport-go v0.13 server still announces the draft-02
// SETTINGS_ENABLE_WEBTRANSPORT and accepts its CONNECT, execution streams
// and close: interop/draft02peer in client mode fails no guide check. It
// names json only, so client.cbor is skipped; it never sends a FIN.
func TestDraft02ClientIsJudged(t *testing.T) {
	t.Parallel()
	bin := draft02test.Build(t)
	rs := RunClient(context.Background(), clientTarget(bin), Options{CheckTimeout: 30 * time.Second, FINWait: noFINWait})
	if len(rs) != len(ClientChecks()) {
		t.Fatalf("%d results for %d checks", len(rs), len(ClientChecks()))
	}
	for _, r := range rs {
		t.Logf("%s (%s): %s: %s", r.ID, r.Source, r.Status, r.Seen)
		want := Pass
		switch r.ID {
		case "client.cbor":
			want = Skip
		case "client.shutdown-fin":
			want = Fail
		}
		if r.Status != want {
			t.Errorf("%s: %s, want %s: %s", r.ID, r.Status, want, r.Seen)
		}
	}
	if r := rs[slices.IndexFunc(rs, func(r Result) bool { return r.ID == "client.stream" })]; !strings.Contains(r.Seen, "8388608 bytes") {
		t.Errorf("client.stream: the draft-02 client did not report the whole stream: %s", r.Seen)
	}
}
