package bridge_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// bigBody is a request body of n bytes that counts what the client sent.
type bigBody struct {
	n, sent int64
}

func (b *bigBody) Read(p []byte) (int, error) {
	left := b.n - atomic.LoadInt64(&b.sent)
	if left <= 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), left))
	for i := range k {
		p[i] = ' '
	}
	atomic.AddInt64(&b.sent, int64(k))
	return k, nil
}

// TestHTTPFrontChecksSessionBeforeBody (issue 11): a POST for an unknown
// session is refused (404) before its body is read, and one without a
// session id (only an initialize can be) is read up to MaxInitBody at
// most: 60 MB bodies cost the front almost nothing.
func TestHTTPFrontChecksSessionBeforeBody(t *testing.T) {
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	ts, _ := frontOn(t, srv, bridge.HTTPConfig{})
	const size = 60 << 20
	for _, c := range []struct {
		name    string
		sid     string
		chunked bool
		want    int
	}{
		{"unknown session, Content-Length", "nope", false, http.StatusNotFound},
		{"unknown session, chunked", "nope", true, http.StatusNotFound},
		{"no session, Content-Length", "", false, http.StatusRequestEntityTooLarge},
		{"no session, chunked", "", true, http.StatusRequestEntityTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			body := &bigBody{n: size}
			req, _ := http.NewRequest("POST", ts.URL, body)
			if !c.chunked {
				req.ContentLength = size
			}
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Content-Type", "application/json")
			if c.sid != "" {
				req.Header.Set("MCP-Session-Id", c.sid)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("no answer (the front should answer before reading the body): %v", err)
			}
			resp.Body.Close()
			runtime.ReadMemStats(&after)
			sent := atomic.LoadInt64(&body.sent)
			t.Logf("%d: the client sent %d of %d bytes; %d KiB allocated meanwhile (client included)", resp.StatusCode, sent, size, (after.TotalAlloc-before.TotalAlloc)>>10)
			if resp.StatusCode != c.want {
				t.Errorf("status %d, want %d", resp.StatusCode, c.want)
			}
			if sent >= size/2 {
				t.Errorf("the client could send %d of %d bytes: the front read the body", sent, size)
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 16<<20 {
				t.Errorf("%d MiB allocated for a refused 60 MB POST", a>>20)
			}
		})
	}
}

// TestHTTPFrontBodiesInFlight: past MaxBodiesInFlight (the bytes of
// request bodies being read at once, over all sessions), a POST gets 503
// with Retry-After; once the body in flight is read, POSTs go through.
func TestHTTPFrontBodiesInFlight(t *testing.T) {
	t.Parallel()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	ts, _ := frontOn(t, srv, bridge.HTTPConfig{MaxBodiesInFlight: 1 << 20})
	sid := openSession(t, ts.URL, "2025-11-25")
	// A: 900 KB declared, sent slowly (the rest once the test says so).
	ping := `{"jsonrpc":"2.0","id":"a","method":"ping"}`
	const aSize = 900_000
	startA := func() (*io.PipeWriter, chan string) {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest("POST", ts.URL, pr)
		req.ContentLength = aSize
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Session-Id", sid)
		aDone := make(chan string, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				aDone <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			aDone <- fmt.Sprint(resp.StatusCode, " ", string(b))
		}()
		go pw.Write([]byte(ping))
		return pw, aDone
	}
	pw, aDone := startA()
	defer func() { pw.CloseWithError(io.ErrUnexpectedEOF) }()
	// B: 200 KB; it is refused once A's body is in flight (A's request
	// reaches the front on its own connection, so B tries until then; when
	// B's own body in flight made A's refused, A starts again).
	bBody := `{"jsonrpc":"2.0","id":"b","method":"ping"}` + strings.Repeat(" ", 200_000)
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case a := <-aDone:
			if !strings.HasPrefix(a, "503 ") {
				t.Fatalf("A, its body not all sent: %s", a)
			}
			pw.Close()
			pw, aDone = startA()
			continue
		default:
		}
		r, body := send(t, ts.URL, "POST", bBody, withSession(sid))
		if r.StatusCode == http.StatusServiceUnavailable {
			if r.Header.Get("Retry-After") == "" || !strings.Contains(body, "MaxBodiesInFlight") {
				t.Fatalf("503 without Retry-After or reason: %q", body)
			}
			break
		}
		if r.StatusCode != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("B while A's body is in flight: %d %s", r.StatusCode, body)
		}
	}
	go func(pw *io.PipeWriter) {
		pw.Write([]byte(strings.Repeat(" ", aSize-len(ping))))
		pw.Close()
	}(pw)
	select {
	case a := <-aDone:
		if !strings.HasPrefix(a, "200 ") || !strings.Contains(a, `"id":"a","result"`) {
			t.Fatalf("A: %s", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("A has no answer 10 s after its body was sent")
	}
	if r, body := send(t, ts.URL, "POST", bBody, withSession(sid)); r.StatusCode != http.StatusOK || !strings.Contains(body, `"id":"b","result"`) {
		t.Fatalf("B once A is read: %d %s", r.StatusCode, body)
	}
}

// legacyGET opens a 2024-11-05 HTTP+SSE stream and reads its endpoint
// event; the stream's body is returned open (closed with the test).
func legacyGET(t *testing.T, url string) (*http.Response, *bufio.Reader) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if line, err := br.ReadString('\n'); err != nil || line != "event: endpoint\n" {
			t.Fatalf("legacy stream starts %q, %v", line, err)
		}
	}
	return resp, br
}

// TestHTTPFrontLegacyStreamsTakeNoSessionSlots (issue 11): HTTP+SSE
// streams that never initialize do not count against MaxSessions: with
// both slots "taken" by such streams, an initialize still succeeds.
func TestHTTPFrontLegacyStreamsTakeNoSessionSlots(t *testing.T) {
	t.Parallel()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	ts, _ := frontOn(t, srv, bridge.HTTPConfig{MaxSessions: 2})
	for i := range 3 {
		if r, _ := legacyGET(t, ts.URL); r.StatusCode != http.StatusOK {
			t.Fatalf("legacy stream %d: %d", i, r.StatusCode)
		}
	}
	openSession(t, ts.URL, "2025-11-25")
	openSession(t, ts.URL, "2025-11-25")
	if r, _ := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil); r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third session: %d, want 503", r.StatusCode)
	}
}

// TestHTTPFrontUninitializedLegacyLimits: past MaxUninitialized, an
// HTTP+SSE GET gets 503; a stream without a successful initialize ends
// after InitTimeout, which frees its slot.
func TestHTTPFrontUninitializedLegacyLimits(t *testing.T) {
	t.Parallel()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	const initTimeout = 300 * time.Millisecond
	ts, ends := frontOn(t, srv, bridge.HTTPConfig{MaxUninitialized: 2, InitTimeout: initTimeout})
	_, a := legacyGET(t, ts.URL)
	_, b := legacyGET(t, ts.URL)
	if r, _ := legacyGET(t, ts.URL); r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a third uninitialized stream: %d, want 503 with Retry-After", r.StatusCode)
	}
	for _, br := range []*bufio.Reader{a, b} {
		done := make(chan error, 1)
		go func() { _, err := io.Copy(io.Discard, br); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the stream ended with %v", err)
			}
		case <-time.After(10*time.Second + initTimeout):
			t.Fatalf("an uninitialized stream still open %v after its InitTimeout %v", 10*time.Second, initTimeout)
		}
	}
	for range 2 {
		select {
		case r := <-ends:
			if !strings.Contains(r["why"], "InitTimeout") {
				t.Fatalf("a stream ended: %v", r)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the front logged no end of the streams")
		}
	}
	if r, _ := legacyGET(t, ts.URL); r.StatusCode != http.StatusOK {
		t.Fatalf("a new stream once the others timed out: %d", r.StatusCode)
	}
}

// smallBuffers makes every accepted connection's send buffer small, so
// that a client that stops reading stops the front's writes at once.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// TestHTTPFrontHeldBytes (issue 11): a client that does not read a large
// result makes the front hold it; past MaxSessionHeld (or MaxHeld over all
// sessions) the next response becomes a -32603 error naming the cap, the
// held result is still delivered whole once read, and what was kept only
// for resumption makes room again.
func TestHTTPFrontHeldBytes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		cfg      bridge.HTTPConfig
		sessions int
		cap      string
	}{
		{"MaxSessionHeld", bridge.HTTPConfig{MaxSessionHeld: 4 << 20}, 1, "MaxSessionHeld"},
		{"MaxHeld", bridge.HTTPConfig{MaxHeld: 4 << 20}, 2, "MaxHeld"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
			ts := httptest.NewUnstartedServer(nil)
			ts.Listener = smallBuffers{ts.Listener}
			tsFront, _ := frontOn(t, srv, c.cfg) // for its handler only
			ts.Config.Handler = tsFront.Config.Handler
			ts.Start()
			t.Cleanup(ts.Close)
			client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
				return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
			}}).DialContext}}
			t.Cleanup(client.CloseIdleConnections)
			sids := []string{openSession(t, ts.URL, "2025-11-25")}
			if c.sessions == 2 {
				sids = append(sids, openSession(t, ts.URL, "2025-11-25"))
			}
			const n = 2 << 20 // 2.8 MB of JSON once in base64
			generate := func(id int) string {
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"generate","arguments":{"bytes":%d}}}`, id, n)
			}
			// A: read the start of its result, then stop reading.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL, strings.NewReader(generate(1)))
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Session-Id", sids[0])
			a, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Body.Close()
			ab := bufio.NewReader(a.Body)
			head := make([]byte, 64<<10)
			if _, err := io.ReadFull(ab, head); err != nil || !strings.Contains(string(head), `"id":1,"result"`) {
				t.Fatalf("A's first 64 KiB: %v %.200q", err, head)
			}
			// B, on the same session or another: refused past the cap.
			_, body := send(t, ts.URL, "POST", generate(2), withSession(sids[len(sids)-1]))
			if !strings.Contains(body, `"id":2,"error"`) || !strings.Contains(body, "-32603") || !strings.Contains(body, c.cap) {
				t.Fatalf("B while A's result is held: %.300s", body)
			}
			rest, err := io.ReadAll(ab)
			whole := string(head) + string(rest)
			if err != nil || !strings.Contains(whole, `"blob":"`) || len(whole) < n*4/3 {
				t.Fatalf("A once read: %v, %d bytes", err, len(whole))
			}
			// A is done: what it held stays only for resumption and
			// gives way.
			_, body = send(t, ts.URL, "POST", generate(3), withSession(sids[len(sids)-1]))
			if !strings.Contains(body, `"id":3,"result"`) || len(body) < n*4/3 {
				t.Fatalf("C once A was read: %.300s", body)
			}
		})
	}
}
