package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/draft02/draft02test"
)

// TestDraft02Server: the runner reaches a WebTransport draft-02 server (as
// the published v0.1 examples are) by itself, and judges it on what it does.
func TestDraft02Server(t *testing.T) {
	p := draft02test.Start(t)
	rs := RunServer(context.Background(), Target{URL: p.URL, TLS: p.TLS}, ServerChecks(), Options{CheckTimeout: 3 * time.Second})
	byID := map[string]Result{}
	for _, r := range rs {
		byID[r.ID] = r
	}
	for id, want := range map[string]Status{
		"init.json":                    Pass,
		"negotiate.none":               Pass,
		"negotiate.cbor":               Skip, // it speaks json only
		"state.ping-before-initialize": Pass,
		"stream.header":                Pass, // an execution stream over draft-02
		"method.unknown":               Pass,
		"tls.13":                       Pass,
		"frame.zero-length":            Fail, // it gives up on the session
		"origin":                       Fail, // it takes any Origin
	} {
		if got := byID[id]; got.Status != want {
			t.Errorf("%s: %s (%s), want %s", id, got.Status, got.Seen, want)
		}
	}
}

// TestDraft02Refused: told to speak only the current WebTransport, the
// runner says at once why it cannot reach a draft-02 server.
func TestDraft02Refused(t *testing.T) {
	p := draft02test.Start(t)
	rs := RunServer(context.Background(), Target{URL: p.URL, TLS: p.TLS, Dialect: DialectCurrent}, ServerChecks(), Options{CheckTimeout: 3 * time.Second})
	everyCheckFails(t, rs, ServerChecks())
	if len(rs) > 0 && !strings.Contains(rs[0].Seen, "stream reset partial delivery") {
		t.Errorf("the reason: %s", rs[0].Seen)
	}
}
