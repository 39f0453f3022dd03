package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
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
	resp := listenPOST(t, ctx, http.DefaultClient, url, listenBody)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("listen: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events, next := readEvents(t, resp.Body)
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

// countHandler counts the log records whose message is msg.
type countHandler struct {
	msg string
	n   *atomic.Int64
}

func (h countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h countHandler) WithGroup(string) slog.Handler            { return h }
func (h countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}

// TestHTTPFrontListenQueueBound: a 2026-07-28 client that holds a
// subscriptions/listen POST open without reading it (small socket buffers:
// the front's write blocks at once) makes the front queue its
// notifications up to maxQueuedEvents (256); past it the newest are
// dropped with a warning. The client's other requests are served
// meanwhile, and once it reads, the queued ones arrive in order, without
// a gap, and the subscription goes on (spec §11.7).
func TestHTTPFrontListenQueueBound(t *testing.T) {
	t.Parallel()
	mux, _ := flowtest.ToolsMux(t, demotools.Config{Root: t.TempDir()})
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet, Handler: mux,
		Capabilities: json.RawMessage(`{"tools":{},"resources":{"subscribe":true}}`)})
	var dropped atomic.Int64
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(),
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet},
		Logger: slog.New(countHandler{msg: "a subscription's notification for a client that is not reading was dropped", n: &dropped})}})
	ts := httptest.NewUnstartedServer(front)
	ts.Listener = smallBuffers{ts.Listener}
	ts.Start()
	t.Cleanup(func() { ts.CloseClientConnections(); front.Close(); ts.Close() })
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
	}}).DialContext}}
	t.Cleanup(client.CloseIdleConnections)

	// Each change names its own resource, so that order and gaps show.
	const most = 4000 // far more than the buffers and the queue hold (about 390 here)
	uri := func(i int) string { return fmt.Sprintf("r/%04d", i) }
	uris := make([]string, most)
	for i := range uris {
		uris[i] = uri(i)
	}
	filter, _ := json.Marshal(map[string]any{"notifications": map[string]any{"resourceSubscriptions": uris}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := listenPOST(t, ctx, client, ts.URL, modernBody("listen:0", "subscriptions/listen", string(filter)))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("listen: %d", resp.StatusCode)
	}
	// call is another request of the same client (one MCP-Flow session):
	// its answer also tells that the front has handled every change sent
	// before it (they come before it on the session's control stream).
	call := func(text string) {
		t.Helper()
		if r, body := send(t, ts.URL, "POST", modernBody(2, "tools/call", `{"name":"echo","arguments":{"text":"`+text+`"}}`), modern("tools/call", "echo")); !strings.Contains(body, text) {
			t.Fatalf("a call while the listen is not read: %d %s", r.StatusCode, body)
		}
	}
	// The acknowledgement is the first event: the subscription is in place
	// once the front has it, and it is read here only with the rest.
	sent := 0
	for sent < most && dropped.Load() == 0 {
		srv.ResourceUpdated(uri(sent))
		sent++
		if sent%16 == 0 { // paced, so that only a blocked write lets the queue fill
			call(fmt.Sprint("paced ", sent))
		}
	}
	for range 5 { // the newest keep being dropped while the client does not read
		srv.ResourceUpdated(uri(sent))
		sent++
	}
	call("after the drops")
	lost := int(dropped.Load())
	if lost < 6 || sent >= most {
		t.Fatalf("%d changes sent, %d dropped: the queue is unbounded", sent, lost)
	}
	t.Logf("%d changes sent, %d dropped", sent, lost)

	_, next := readEvents(t, resp.Body) // the whole backlog is read within milliseconds here
	if e := next("acknowledgement"); !subscribed(e, protocol.MethodSubscriptionsAcknowledged) {
		t.Fatalf("acknowledgement: %s", e)
	}
	for i := range sent - lost { // the oldest, in order, without a gap
		if e := next(uri(i)); !subscribed(e, protocol.MethodResourceUpdated) || !strings.Contains(e, `"uri":"`+uri(i)+`"`) {
			t.Fatalf("change %d of the %d kept: %s", i, sent-lost, e)
		}
	}
	// Nothing else was kept, and the subscription goes on.
	srv.ResourceUpdated(uri(sent))
	if e := next("change after reading"); !strings.Contains(e, `"uri":"`+uri(sent)+`"`) {
		t.Fatalf("after reading, the next change is %s, want %s", e, uri(sent))
	}
}

// listenPOST sends a 2026-07-28 subscriptions/listen POST (body) with
// client; its response body is closed with the test.
func listenPOST(t *testing.T, ctx context.Context, client *http.Client, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modern("subscriptions/listen", "") {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readEvents reads the SSE events of body on a goroutine: next returns the
// data of the next one (what names it if none comes), and events closes
// when body ends.
func readEvents(t *testing.T, body io.Reader) (events chan string, next func(what string) string) {
	events = make(chan string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- d
			}
		}
	}()
	next = func(what string) string {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(20 * time.Second): // a hang guard: each event comes within milliseconds here
			t.Fatalf("no %s", what)
			return ""
		}
	}
	return events, next
}

// TestHTTPFrontShutdownEndsListen: the HTTP front's Shutdown with a
// 2026-07-28 client's subscriptions/listen open does not wait for it (it
// would never end by itself): the listen ends with its graceful result
// and Shutdown returns at once (spec §11.7).
func TestHTTPFrontShutdownEndsListen(t *testing.T) {
	t.Parallel()
	srv, _, _ := statelessServer(t)
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(),
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: flowtest.Quiet}})
	ts := httptest.NewServer(front)
	t.Cleanup(func() { front.Close(); ts.Close() })
	resp := listenPOST(t, context.Background(), http.DefaultClient, ts.URL, listenBody)
	events, next := readEvents(t, resp.Body)
	if e := next("acknowledgement"); !subscribed(e, protocol.MethodSubscriptionsAcknowledged) {
		t.Fatalf("acknowledgement: %s", e)
	}
	// A hang guard: Shutdown takes milliseconds here.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := front.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a listen open: %v after %v", err, time.Since(start))
	}
	t.Logf("Shutdown took %v", time.Since(start))
	var rest []string
	for e := range events {
		rest = append(rest, e)
	}
	if len(rest) != 1 || rest[0] != `{"jsonrpc":"2.0","id":"listen:0","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen:0"}}}` {
		t.Fatalf("the listen's stream after Shutdown: %q, want its graceful result", rest)
	}
}
