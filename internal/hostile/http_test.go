package hostile

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startHTTPFront starts `mcp-flow bridge http` towards e's server on a free
// port, with the bridge's flags args, and waits until it listens (it
// prints its endpoint before it listens: the port is polled, bounded by
// e.ctx, failing at once if the process exits). It returns the endpoint
// URL and the process.
func (e *env) startHTTPFront(args ...string) (string, *Stdio) {
	e.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// Offloaded streams go under the test's own directory: the front is
	// killed at the end (Stdio's cleanup), which leaves no time to remove
	// a session's files itself.
	front := StartStdio(e.t, cliBin, append(append([]string{"-cert-hash", e.srv.Hash, "-listen", addr, "-stream-dir", e.t.TempDir()}, args...), "bridge", "http", e.srv.URL)...)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr + "/mcp", front
		}
		select {
		case <-front.exited:
			e.t.Fatalf("bridge http exited (%v) before it listened; stderr:\n%s", front.err, front.Stderr)
		case <-e.ctx.Done():
			e.t.Fatalf("bridge http does not listen on %s; stderr:\n%s", addr, front.Stderr)
		case <-tick.C:
		}
	}
}

// TestHTTPFront: attacks on the Streamable HTTP front that held on main
// (issue 11): a hostile Origin gets 403, 100,000 headers get 431, a 100 MB
// body is refused; the front then serves a well-behaved initialize, and the
// server's other sessions do not notice. (The HTTP front's memory bounds
// are being built elsewhere; its RSS is reported here, not judged.)
func TestHTTPFront(t *testing.T) {
	e := setup(t)
	url, front := e.startHTTPFront()
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hostile","version":"0"}}}`
	post := func(body io.Reader, hdr http.Header) (int, error) {
		req, err := http.NewRequestWithContext(e.ctx, "POST", url, body)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	base, err := ReadMem(front.PID())
	if err != nil {
		t.Fatal(err)
	}
	e.during(func() {
		if code, err := post(strings.NewReader(initialize), http.Header{"Origin": {"https://evil.example"}}); err != nil || code != http.StatusForbidden {
			t.Errorf("hostile Origin: %d %v, want 403", code, err)
		}
		many := http.Header{}
		for i := range 100_000 {
			many[fmt.Sprintf("X-H%d", i)] = []string{"x"}
		}
		if code, err := post(strings.NewReader(initialize), many); err == nil && code != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("100,000 headers: %d, want 431", code)
		}
		big := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`), bytes.NewReader(bytes.Repeat([]byte("x"), 100<<20)), strings.NewReader(`"}}`))
		if code, err := post(big, nil); err == nil && code < 400 {
			t.Errorf("a 100 MB body: %d, want it refused", code)
		} else {
			t.Logf("a 100 MB body: %d %v", code, err)
		}
		if code, err := post(strings.NewReader(initialize), nil); err != nil || code != http.StatusOK {
			t.Errorf("a well-behaved initialize after the attacks: %d %v", code, err)
		}
	})
	m, err := ReadMem(front.PID())
	if err != nil {
		t.Fatalf("the HTTP front is gone: %v; stderr:\n%s", err, front.Stderr)
	}
	t.Logf("measured: HTTP front before %v; after %v", base, m)
	e.alive()
}
