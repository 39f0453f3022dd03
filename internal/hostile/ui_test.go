package hostile

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestUIRebinding: `mcp-flow ui` (the inspector) refuses a request whose
// Host is not its own address (DNS rebinding: a page on
// rebind.attacker.example whose name now resolves to 127.0.0.1 would read
// config.json, the server's URL and certificate hash, and drive the Call
// and Shutdown buttons), and forbids framing on every response (issue 22).
// The server URL it is given need not answer: the page is served all the
// same.
func TestUIRebinding(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), attackTimeout)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	l.Close()
	ui := StartStdio(t, cliBin, "ui", "-listen", addr, "-cert-hash", "00", "https://127.0.0.1:1/mcp-flow")
	// It prints its address before it listens: poll the port, failing at
	// once if it exits.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-ui.exited:
			t.Fatalf("mcp-flow ui exited (%v) before it listened; stderr:\n%s", ui.err, ui.Stderr)
		case <-ctx.Done():
			t.Fatalf("mcp-flow ui does not listen on %s; stderr:\n%s", addr, ui.Stderr)
		case <-tick.C:
		}
	}
	get := func(path, host string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s Host %s: %v", path, host, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if csp, xfo := resp.Header.Get("Content-Security-Policy"), resp.Header.Get("X-Frame-Options"); csp != "frame-ancestors 'none'" || xfo != "DENY" {
			t.Errorf("GET %s Host %s: Content-Security-Policy %q, X-Frame-Options %q; want frame-ancestors 'none' and DENY", path, host, csp, xfo)
		}
		return resp
	}
	for _, path := range []string{"/", "/config.json"} {
		for _, host := range []string{"evil.example", "rebind.attacker.example:" + port} {
			if resp := get(path, host); resp.StatusCode/100 != 4 {
				t.Errorf("GET %s Host %s: %s, want it refused (4xx)", path, host, resp.Status)
			}
		}
		if resp := get(path, "127.0.0.1:"+port); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s Host 127.0.0.1:%s: %s, want 200", path, port, resp.Status)
		}
	}
}
