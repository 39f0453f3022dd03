package bridge_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/protocol"
)

// listenBody is a 2026-07-28 subscriptions/listen for tools/list_changed
// with the TypeScript SDK v2 client's kind of id, a string.
var listenBody = modernBody("listen:0", "subscriptions/listen", `{"notifications":{"toolsListChanged":true,"promptsListChanged":true}}`)

// subscribed reports whether msg is method naming the subscription
// "listen:0" (spec §11.7): the client's id, not the MCP-Flow call's.
func subscribed(msg, method string) bool {
	return strings.Contains(msg, `"method":"`+method+`"`) && strings.Contains(msg, `"io.modelcontextprotocol/subscriptionId":"listen:0"`)
}

// TestStdioFrontListen: a 2026-07-28 host's subscriptions/listen through
// the stdio front is acknowledged (tools granted, prompts not: the test
// tools have no prompts) and then hears the server's tools/list_changed,
// each naming the host's own id; notifications/cancelled ends it without
// an answer and the session goes on; a host that leaves with one open
// still sees the bridge exit 0 (spec §11.7).
func TestStdioFrontListen(t *testing.T) {
	t.Parallel()
	cli := buildCLI(t)
	srv, _, _ := statelessServer(t)
	h := startNDJSONHost(t, cli, srv)
	h.send(listenBody)
	if r := h.read(); !subscribed(r, protocol.MethodSubscriptionsAcknowledged) || !strings.Contains(r, `"notifications":{"toolsListChanged":true}`) {
		t.Fatalf("acknowledgement: %s", r)
	}
	if err := srv.ListChanged(protocol.MethodToolsListChanged); err != nil {
		t.Fatal(err)
	}
	if r := h.read(); !subscribed(r, protocol.MethodToolsListChanged) {
		t.Fatalf("list change: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"listen:0"}}`)
	h.send(modernBody(8, "tools/call", `{"name":"echo","arguments":{"text":"after"}}`))
	if r := h.read(); !strings.Contains(r, `"id":8`) || !strings.Contains(r, "after") {
		t.Fatalf("after the cancel (no answer to the listen expected): %s", r)
	}
	// A host that leaves with a subscription open: the bridge still exits.
	h.send(listenBody)
	if r := h.read(); !subscribed(r, protocol.MethodSubscriptionsAcknowledged) {
		t.Fatalf("second acknowledgement: %s", r)
	}
	h.exit()
}

// TestHTTPFrontListen: a 2026-07-28 client's subscriptions/listen POST
// through the HTTP front is held open as an SSE stream: the
// acknowledgement, then the server's tools/list_changed, each naming the
// client's id; closing the stream ends it and the front serves on (spec
// §11.7).
func TestHTTPFrontListen(t *testing.T) {
	t.Parallel()
	srv, _, sessions := statelessServer(t)
	url := statelessFront(t, srv, sessions)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(listenBody))
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modern("subscriptions/listen", "") {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("listen: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan string, 8)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- d
			}
		}
	}()
	// A hang guard: each event comes within milliseconds here.
	next := func(what string) string {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(20 * time.Second):
			t.Fatalf("no %s", what)
			return ""
		}
	}
	if e := next("acknowledgement"); !subscribed(e, protocol.MethodSubscriptionsAcknowledged) {
		t.Fatalf("acknowledgement: %s", e)
	}
	if err := srv.ListChanged(protocol.MethodToolsListChanged); err != nil {
		t.Fatal(err)
	}
	if e := next("list change"); !subscribed(e, protocol.MethodToolsListChanged) {
		t.Fatalf("list change: %s", e)
	}
	cancel()
	for range events {
	}
	if r, body := send(t, url, "POST", modernBody(2, "tools/call", `{"name":"echo","arguments":{"text":"after"}}`), modern("tools/call", "echo")); !strings.Contains(body, "after") {
		t.Fatalf("a call after the listen: %d %s", r.StatusCode, body)
	}
}
