package bridge_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// TestHTTPFrontGETTakesOver: a second GET stream of a 2025-11-25 session,
// while the first is still open (a client reconnecting before the front
// saw its old stream end), is served, not refused with 409: it takes the
// standalone stream over, the first ends, and what the server sends next
// comes on the second alone (spec §10). The TypeScript SDK v2 client's
// reconnection met the 409 in two runs of the suite beside another.
func TestHTTPFrontGETTakesOver(t *testing.T) {
	t.Parallel()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	ts, _ := frontOn(t, srv, bridge.HTTPConfig{})
	sid := openSession(t, ts.URL, "2025-11-25")
	get := func() (*http.Response, chan string, func(string) string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("MCP-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %d, want 200", resp.StatusCode)
		}
		events, next := readEvents(t, resp.Body)
		// The next event with data (the priming event has none).
		return resp, events, func(what string) string {
			for {
				if e := next(what); e != "" {
					return e
				}
			}
		}
	}
	changed := func() {
		t.Helper()
		if err := srv.ListChanged(protocol.MethodToolsListChanged); err != nil {
			t.Fatal(err)
		}
	}
	_, first, nextFirst := get()
	changed()
	if e := nextFirst("the first GET's list change"); !strings.Contains(e, protocol.MethodToolsListChanged) {
		t.Fatalf("the first GET stream: %s", e)
	}
	_, _, nextSecond := get() // the first is still open
	for ended := false; !ended; {
		select {
		case e, ok := <-first:
			if ended = !ok; ok && e != "" {
				t.Fatalf("the first GET stream, taken over, carried %s", e)
			}
		case <-time.After(20 * time.Second): // a hang guard: it ends within milliseconds here
			t.Fatal("the first GET stream did not end when the second took over")
		}
	}
	changed()
	if e := nextSecond("the second GET's list change"); !strings.Contains(e, protocol.MethodToolsListChanged) {
		t.Fatalf("the second GET stream: %s", e)
	}
}
