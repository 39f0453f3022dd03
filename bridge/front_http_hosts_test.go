package bridge_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestHTTPFrontHostsAndLinks (issue 22): download links name the front's
// configuration (PublicURL) or its listener, never a request's Host; Host
// headers are checked on every listener, port included.
func TestHTTPFrontHostsAndLinks(t *testing.T) {
	t.Parallel()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	link := func(t *testing.T, url string, hdr map[string]string) string {
		t.Helper()
		h := modern("tools/call", "generate")
		for k, v := range hdr {
			h[k] = v
		}
		r, body := send(t, url, "POST", modernBody(1, "tools/call", `{"name":"generate","arguments":{"bytes":300000}}`), h)
		i := strings.Index(body, `"uri":"`)
		if r.StatusCode != http.StatusOK || i < 0 {
			t.Fatalf("generate past the inline limit: %d %.300s", r.StatusCode, body)
		}
		uri, _, _ := strings.Cut(body[i+len(`"uri":"`):], `"`)
		return uri
	}
	t.Run("listener", func(t *testing.T) {
		ts, _ := frontWith(t, srv, bridge.HTTPConfig{Stdio: bridge.StdioConfig{InlineLimit: 100_000}}, "")
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
		// The first request of a 2026 client names the host "localhost":
		// its links still name the listener's address.
		if uri := link(t, ts.URL, map[string]string{"Host": "localhost:" + port}); !strings.HasPrefix(uri, ts.URL+"/?download=") {
			t.Errorf("link %q, want the listener's %s", uri, ts.URL)
		}
		for host, want := range map[string]int{
			"127.0.0.1:" + port: http.StatusOK, "localhost": http.StatusOK, "127.0.0.2:" + port: http.StatusOK, "[::1]:" + port: http.StatusOK,
			"127.0.0.1:9999": http.StatusForbidden, "evil.example": http.StatusForbidden, "evil.example:" + port: http.StatusForbidden,
		} {
			r, body := send(t, ts.URL, "POST", modernBody(2, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`), map[string]string{
				"Host": host, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
			if r.StatusCode != want {
				t.Errorf("Host %s: %d %.200s, want %d", host, r.StatusCode, body, want)
			}
		}
	})
	t.Run("PublicURL", func(t *testing.T) {
		const public = "https://mcp.example.com/tools/mcp"
		ts, _ := frontWith(t, srv, bridge.HTTPConfig{Stdio: bridge.StdioConfig{InlineLimit: 100_000}, PublicURL: public}, "")
		if uri := link(t, ts.URL, map[string]string{"Host": "mcp.example.com"}); !strings.HasPrefix(uri, public+"?download=") {
			t.Errorf("link %q, want %s?download=…", uri, public)
		}
		if r, body := send(t, ts.URL, "POST", modernBody(2, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`), map[string]string{
			"Host": "other.example.com", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}); r.StatusCode != http.StatusForbidden {
			t.Errorf("a host that is not PublicURL's: %d %.200s, want 403", r.StatusCode, body)
		}
	})
	t.Run("non-loopback listener", func(t *testing.T) {
		// The handler as net/http calls it for a connection to 192.0.2.7:8080
		// (no such listener is needed to judge the Host header).
		// HostNames (mcp-flow-server's certificate names) are allowed too.
		front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(), Logger: flowtest.Quiet}, HostNames: []string{"mcp.example.com"}})
		t.Cleanup(func() { front.Close() })
		for host, want := range map[string]int{
			"192.0.2.7:8080": http.StatusMethodNotAllowed, "192.0.2.7": http.StatusMethodNotAllowed, "mcp.example.com:8080": http.StatusMethodNotAllowed,
			"localhost:8080": http.StatusForbidden, "127.0.0.1:8080": http.StatusForbidden, "evil.example": http.StatusForbidden, "192.0.2.7:9": http.StatusForbidden,
		} {
			req := httptest.NewRequest("PUT", "http://"+host+"/mcp", nil)
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 8080}))
			w := httptest.NewRecorder()
			front.ServeHTTP(w, req)
			if w.Code != want {
				t.Errorf("Host %s on a non-loopback listener: %d %s, want %d", host, w.Code, w.Body, want)
			}
		}
	})
}

// TestCheckPublicURL: what -public-url takes.
func TestCheckPublicURL(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{
		"https://mcp.example.com/mcp": true, "http://127.0.0.1:8080/mcp": true, "https://[::1]:8443/": true,
		"ftp://x/mcp": false, "/mcp": false, "mcp.example.com/mcp": false, "https://u:p@x/mcp": false,
		"https://x/mcp?a=b": false, "https://x/mcp#f": false, "https:///mcp": false, "https://x/mcp?": false,
	} {
		if _, err := bridge.CheckPublicURL(s); (err == nil) != ok {
			t.Errorf("CheckPublicURL(%q): %v, want ok=%v", s, err, ok)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "PublicURL") {
			t.Errorf("NewHTTPFront with a bad PublicURL: %v, want a panic naming PublicURL", r)
		}
	}()
	bridge.NewHTTPFront(bridge.HTTPConfig{PublicURL: "ftp://x"})
}
