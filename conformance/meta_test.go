package conformance

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/quic-go/webtransport-go"
)

// The meta-tests run the runner against peers that implement nothing: every
// check it claims to run must fail. A check that passes here passes without
// evidence from the peer.

// everyCheckFails fails t unless rs has one failed result for each of want.
func everyCheckFails(t *testing.T, rs []Result, want []Check) {
	t.Helper()
	if len(rs) != len(want) {
		t.Errorf("%d results for %d checks", len(rs), len(want))
	}
	for _, r := range rs {
		if r.Status != Fail {
			t.Errorf("%s: %s without evidence: %s", r.ID, r.Status, r.Seen)
		}
	}
}

// TestNothingListening: against a port where nothing listens the runner
// says so at once, and every check fails with that reason.
func TestNothingListening(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	start := time.Now()
	var printed int
	rs := RunServer(context.Background(), Target{URL: "https://" + addr + "/mcp", TLS: flowtest.ClientTLS(t)}, ServerChecks(),
		Options{CheckTimeout: 10 * time.Second, OnResult: func(Result) { printed++ }})
	// A dial into silence would take QUIC's 5 s handshake idle timeout;
	// the ICMP refusal comes in microseconds.
	d := time.Since(start)
	t.Logf("the run against nothing took %v", d)
	// 0.2-0.3 ms measured with the 2-core machine at load 10 (2026-12-06).
	if d > 3*time.Second {
		t.Errorf("the run took %v", d)
	}
	everyCheckFails(t, rs, ServerChecks())
	if printed != len(rs) {
		t.Errorf("OnResult called %d times for %d results", printed, len(rs))
	}
	if len(rs) > 0 && !strings.Contains(rs[0].Seen, "nothing listens on udp "+addr) {
		t.Errorf("the reason: %s", rs[0].Seen)
	}
}

// TestPeerClosingEverySession: a WebTransport server that closes each
// session as soon as it is established.
func TestPeerClosingEverySession(t *testing.T) {
	url := wtPeer(t, func(s *webtransport.Session) { _ = s.CloseWithError(0, "") })
	rs := RunServer(context.Background(), Target{URL: url, TLS: flowtest.ClientTLS(t)}, ServerChecks(), Options{CheckTimeout: 2 * time.Second})
	everyCheckFails(t, rs, ServerChecks())
}

// TestPeerAnsweringNothing: a WebTransport server that accepts the session
// and the control stream, reads everything and answers nothing.
func TestPeerAnsweringNothing(t *testing.T) {
	t.Parallel()
	url := wtPeer(t, func(s *webtransport.Session) {
		st, err := s.AcceptStream(s.Context())
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, st)
		<-s.Context().Done()
	})
	// Every check runs into its time limit, one after another: 400 ms each
	// keeps the test short (21 s at 1 s each); a session that does not open
	// within it fails the check too, which is the verdict this test wants.
	rs := RunServer(context.Background(), Target{URL: url, TLS: flowtest.ClientTLS(t)}, ServerChecks(), Options{CheckTimeout: 400 * time.Millisecond})
	everyCheckFails(t, rs, ServerChecks())
}

// TestClientThatNeverConnects: /bin/false exits non-zero without
// connecting; no client check may pass on that.
func TestClientThatNeverConnects(t *testing.T) {
	rs := RunClient(context.Background(), clientTarget("/bin/false"), Options{CheckTimeout: 10 * time.Second})
	everyCheckFails(t, rs, ClientChecks())
	for _, r := range rs {
		if !strings.Contains(r.Seen, "never called") {
			t.Errorf("%s: %s", r.ID, r.Seen)
		}
	}
}

// TestClientThatAlwaysExitsOne: conformance/internal/exitoneclient calls
// the tool, prints the result and exits 1 whatever happened. Exiting
// non-zero after the call is not what client.stream-error and
// client.invalid-ref ask: each wants the client to report its error, and
// this client reports none, so both fail it, saying so.
func TestClientThatAlwaysExitsOne(t *testing.T) {
	t.Parallel()
	bin := buildCmd(t, "github.com/mcp-flow/mcp-flow/conformance/internal/exitoneclient")
	want := []Check{}
	for _, c := range ClientChecks() {
		if c.ID == "client.stream-error" || c.ID == "client.invalid-ref" {
			want = append(want, c)
		}
	}
	rs := RunClient(context.Background(), clientTarget(bin), Options{CheckTimeout: 20 * time.Second, Only: map[string]bool{"client.stream-error": true, "client.invalid-ref": true}})
	everyCheckFails(t, rs, want)
	for _, r := range rs {
		t.Logf("%s: %s: %s", r.ID, r.Status, r.Seen)
		if !strings.Contains(r.Seen, "exited 1 without reporting") {
			t.Errorf("%s: %s, want the reason that the client reported nothing", r.ID, r.Seen)
		}
	}
}
