package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// holdTool is a tool of the test server, "hold", that runs until the test
// releases it or its caller cancels it.
type holdTool struct {
	holding   chan struct{} // one value per call that reached the tool
	release   chan struct{} // closed by the test
	cancelled chan struct{} // one value per call cancelled
	once      sync.Once
}

func (h *holdTool) releaseAll() { h.once.Do(func() { close(h.release) }) }

// holdServer is an MCP-Flow server with the test tools and "hold".
func holdServer(t *testing.T) (*flow.Server, *holdTool) {
	mux, caps := flowtest.ToolsMux(t, demotools.Config{Root: t.TempDir()})
	h := &holdTool{holding: make(chan struct{}, 16), release: make(chan struct{}), cancelled: make(chan struct{}, 16)}
	tools := mux["tools/call"]
	mux["tools/call"] = flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		var p struct{ Name string }
		if json.Unmarshal(req.Params, &p); p.Name != "hold" {
			return tools.HandleRequest(ctx, req)
		}
		h.holding <- struct{}{}
		select {
		case <-h.release:
			return map[string]any{"content": []any{map[string]any{"type": "text", "text": "released"}}}, nil
		case <-ctx.Done():
			h.cancelled <- struct{}{}
			return nil, ctx.Err()
		}
	})
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet, Handler: mux, Capabilities: caps})
	t.Cleanup(h.releaseAll) // before the server closes: the held calls end
	return srv, h
}

// frontOn serves an HTTP front for srv with cfg (its Stdio part filled in);
// ends receives the front's "HTTP session ended" records.
func frontOn(t *testing.T, srv *flow.Server, cfg bridge.HTTPConfig) (ts *httptest.Server, ends chan map[string]string) {
	t.Helper()
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	ends = make(chan map[string]string, 64)
	cfg.Stdio.URL = srv.URL()
	cfg.Stdio.Client = flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}
	cfg.Stdio.Logger = slog.New(recordHandler{ch: ends, only: "HTTP session ended"})
	front := bridge.NewHTTPFront(cfg)
	ts = httptest.NewServer(front)
	t.Cleanup(func() { ts.CloseClientConnections(); front.Close(); ts.Close() }) // the front's sessions end with the test: none reconnects after it
	return ts, ends
}

// openSession initializes a Streamable HTTP session of MCP version v.
func openSession(t *testing.T, url, v string) string {
	t.Helper()
	r, body := send(t, url, "POST", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	sid := r.Header.Get("MCP-Session-Id")
	if r.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", r.StatusCode, body)
	}
	return sid
}

// streamPOST starts a POST whose answer is read to its end on a goroutine:
// the body arrives on the returned channel. The request ends with the test.
func streamPOST(t *testing.T, url, sid, body string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // runs before the front's Close
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Session-Id", sid)
	out := make(chan string, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- "error: " + err.Error()
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			b = append(b, "\nerror: "+err.Error()...)
		}
		out <- string(b)
	}()
	return out
}

// waitIdleEnd waits for the front to end a session as idle.
func waitIdleEnd(t *testing.T, ends chan map[string]string, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case r := <-ends:
			if r["why"] == "idle" {
				return
			}
		case <-timeout:
			t.Fatalf("no session ended idle within %v", within)
		}
	}
}

func withSession(sid string) map[string]string { return map[string]string{"MCP-Session-Id": sid} }

// heldCall starts a call of the hold tool with id on session sid and waits
// until the server holds it; its SSE body arrives on the channel.
func heldCall(t *testing.T, url, sid string, hold *holdTool, id int) <-chan string {
	t.Helper()
	call := streamPOST(t, url, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hold","arguments":{}}}`, id))
	select {
	case <-hold.holding:
	case body := <-call:
		t.Fatalf("the call ended before it was held: %s", body)
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not reach the server in 10 s")
	}
	return call
}

// TestHTTPFrontCancelEndsStream (issue 12): after notifications/cancelled
// the call's SSE stream ends at once, without a response (MCP sends none
// for a cancelled request), the server's tool sees the cancellation, and
// the session, idle again, ends after IdleTimeout: its id gets 404.
func TestHTTPFrontCancelEndsStream(t *testing.T) {
	t.Parallel()
	srv, hold := holdServer(t)
	const idle = 300 * time.Millisecond
	ts, ends := frontOn(t, srv, bridge.HTTPConfig{IdleTimeout: idle})
	sid := openSession(t, ts.URL, "2025-11-25")
	call := heldCall(t, ts.URL, sid, hold, 2)
	if r, body := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"test"}}`, withSession(sid)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d %s", r.StatusCode, body)
	}
	select {
	case body := <-call:
		if strings.Contains(body, `"id":2`) {
			t.Fatalf("a cancelled call got a response:\n%s", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call's SSE stream is still open 10 s after notifications/cancelled")
	}
	select {
	case <-hold.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's tool was not cancelled")
	}
	waitIdleEnd(t, ends, 10*time.Second+idle)
	if r, body := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, withSession(sid)); r.StatusCode != http.StatusNotFound {
		t.Fatalf("the idle session after the cancel: %d %s, want 404", r.StatusCode, body)
	}
}

// TestHTTPFrontManyPingBatches (issue 12): 20 batch POSTs of 1,000 pings
// (and 24 notifications) each, at once, on one 2025-03-26 session (20,000 pings; a batch is at
// most codec.Limits.MaxBatch long): every ping is answered on its POST's
// stream, nothing deadlocks, and the heap after them is bounded. A single
// batch of 20,000 is refused whole (-32700, the batch limit).
func TestHTTPFrontManyPingBatches(t *testing.T) {
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	ts, _ := frontOn(t, srv, bridge.HTTPConfig{})
	sid := openSession(t, ts.URL, "2025-03-26")
	const notes = 24 // with 1,000 pings, the batch limit
	batch := func(k, n int) string {
		var b strings.Builder
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":"p%d-%d","method":"ping"}`, k, i)
		}
		// Notifications after the pings keep the POST dispatching while
		// the first answers come back (each is a frame to write).
		for range notes {
			b.WriteString(`,{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
		}
		b.WriteByte(']')
		return b.String()
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	const posts, each = 20, 1000
	bodies := make([]<-chan string, posts)
	for k := range posts {
		bodies[k] = streamPOST(t, ts.URL, sid, batch(k, each))
	}
	timeout := time.After(60 * time.Second)
	got := make([]string, posts)
	for k, ch := range bodies {
		select {
		case got[k] = <-ch:
		case <-timeout:
			t.Fatalf("POST %d of %d: no complete answer in 60 s (deadlock?)", k, posts)
		}
	}
	for k, body := range got {
		var missing []string
		for i := range each {
			if id := fmt.Sprintf(`"id":"p%d-%d",`, k, i); !strings.Contains(body, id) {
				where := -1
				for j, b := range got {
					if strings.Contains(b, id) {
						where = j
					}
				}
				missing = append(missing, fmt.Sprintf("%d (in POST %d's body)", i, where))
			}
		}
		if len(missing) > 0 {
			t.Errorf("POST %d: no answer for %d pings %v in a body of %d bytes ending:\n%s", k, len(missing), missing, len(body), body[max(0, len(body)-500):])
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("20,000 pings in 20 batch POSTs: heap %d → %d KiB after GC", before.HeapAlloc>>10, after.HeapAlloc>>10)
	if grown > 128<<20 {
		t.Errorf("the heap grew by %d MiB after 20,000 pings", grown>>20)
	}
	r, body := send(t, ts.URL, "POST", batch(99, 20000), withSession(sid))
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(body, "-32700") {
		t.Fatalf("a batch of 20,000: %d %.300s", r.StatusCode, body)
	}
	if r, body := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":"after","method":"ping"}`, withSession(sid)); r.StatusCode != http.StatusOK || !strings.Contains(body, `"id":"after","result"`) {
		t.Fatalf("a ping after the batches: %d %s", r.StatusCode, body)
	}
}

// TestHTTPFrontDuplicateRequestID (issue 12): a request id already in
// flight on the session is refused at once on the second POST (HTTP 400, a
// -32600 error for that id); the first call is answered as usual, and
// nothing is left waiting: the session idles out.
func TestHTTPFrontDuplicateRequestID(t *testing.T) {
	t.Parallel()
	srv, hold := holdServer(t)
	// sid must not idle out between its call's answer and its next POST
	// (milliseconds apart); 2 s, not the 300 ms the other idle tests use,
	// since these tests run in parallel under -race beside other work.
	const idle = 2 * time.Second
	ts, ends := frontOn(t, srv, bridge.HTTPConfig{IdleTimeout: idle})
	sid := openSession(t, ts.URL, "2025-11-25")
	call := heldCall(t, ts.URL, sid, hold, 7)
	r, body := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, withSession(sid))
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"id":7,"error"`) || !strings.Contains(body, "-32600") {
		t.Fatalf("a POST reusing id 7 in flight: %d %s; want 400 with a -32600 error for id 7", r.StatusCode, body)
	}
	// Within one batch alike (2025-03-26 only, so on another session).
	old := openSession(t, ts.URL, "2025-03-26")
	r, body = send(t, ts.URL, "POST", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`, withSession(old))
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(body, "-32600") {
		t.Fatalf("a batch with id 1 twice: %d %s", r.StatusCode, body)
	}
	hold.releaseAll()
	select {
	case body := <-call:
		if !strings.Contains(body, `"id":7,"result"`) || !strings.Contains(body, "released") {
			t.Fatalf("the first call's answer: %s", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first call has no answer 10 s after its release")
	}
	if r, body := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, withSession(sid)); r.StatusCode != http.StatusOK || !strings.Contains(body, `"id":7,"result"`) {
		t.Fatalf("id 7 once it is answered: %d %s", r.StatusCode, body)
	}
	waitIdleEnd(t, ends, 10*time.Second+idle)
	waitIdleEnd(t, ends, 10*time.Second+idle)
	if r, _ := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":8,"method":"ping"}`, withSession(sid)); r.StatusCode != http.StatusNotFound {
		t.Fatalf("the session after idling: %d, want 404", r.StatusCode)
	}
}

// TestHTTPFrontPrimingEvent (MCP 2025-11-25 transports, "sending messages
// to the server" 6.A): at 2025-11-25 each SSE stream starts with an event
// that has an id and empty data, from which a client can resume the whole
// stream; earlier versions get none.
func TestHTTPFrontPrimingEvent(t *testing.T) {
	t.Parallel()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	ts, _ := frontOn(t, srv, bridge.HTTPConfig{})
	sid := openSession(t, ts.URL, "2025-11-25")
	_, body := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, withSession(sid))
	const prime = "id: 1.0\ndata: \n\n"
	if !strings.HasPrefix(body, prime) || !strings.Contains(body, "id: 1.1\ndata: {") {
		t.Fatalf("a POST's stream at 2025-11-25:\n%s", body)
	}
	_, replay := send(t, ts.URL, "GET", "", map[string]string{"MCP-Session-Id": sid, "Last-Event-ID": "1.0"})
	if !strings.Contains(replay, `"id":1,"result"`) {
		t.Fatalf("resumed from the priming event:\n%s", replay)
	}
	// The standalone GET stream too (read up to its first event).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Session-Id", sid)
	g, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 256)
	n, _ := io.ReadAtLeast(g.Body, head, len("id: 0.0\ndata: \n\n"))
	g.Body.Close()
	if !strings.Contains(string(head[:n]), "id: 0.0\ndata: \n\n") {
		t.Fatalf("the GET stream starts %q", head[:n])
	}
	old := openSession(t, ts.URL, "2025-03-26")
	if _, body := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, withSession(old)); !strings.HasPrefix(body, "id: 1.1\ndata: {") {
		t.Fatalf("a POST's stream at 2025-03-26 (no priming event):\n%s", body)
	}
}

// TestHTTPFrontShutdownDeadline: HTTPFront.Shutdown waits for the requests
// in flight; when its context ends first, it closes what is left (Close):
// the held call's stream gets a -32603 error and ends, Shutdown returns the
// context's error, and the front refuses new sessions from then on.
func TestHTTPFrontShutdownDeadline(t *testing.T) {
	t.Parallel()
	srv, hold := holdServer(t)
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(),
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: flowtest.Quiet}})
	ts := httptest.NewServer(front)
	t.Cleanup(ts.Close)
	sid := openSession(t, ts.URL, "2025-11-25")
	call := heldCall(t, ts.URL, sid, hold, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := front.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Shutdown with a call held past its deadline: %v", err)
	}
	select {
	case body := <-call:
		if !strings.Contains(body, `"id":5,"error"`) || !strings.Contains(body, "-32603") {
			t.Fatalf("the held call after Close: %s", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held call's stream is open 10 s after Shutdown returned")
	}
	if r, _ := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil); r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("an initialize after Shutdown: %d, want 503", r.StatusCode)
	}
	if err := front.Close(); err != nil {
		t.Fatal(err)
	}
}
