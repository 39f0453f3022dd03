package bridge_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestHTTPFrontCORS (spec §9): a page of an allowed Origin may use the
// front from fetch (the js/ transport's fallback, spec §10.2): its
// preflight is answered with that Origin, the methods and the MCP headers,
// and its actual requests carry Access-Control-Allow-Origin and expose
// Mcp-Session-Id. A page of another Origin gets no CORS grant on either,
// and its actual request is still 403.
func TestHTTPFrontCORS(t *testing.T) {
	t.Parallel()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	h := bridge.NewHTTPFront(bridge.HTTPConfig{AllowedOrigins: []string{"https://app.example"},
		Stdio: bridge.StdioConfig{URL: srv.URL(), Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: flowtest.Quiet}})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { h.Close() })

	preflight := func(origin string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodOptions, ts.URL, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		// Sorted and lower case, as browsers send it (Fetch standard).
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,mcp-protocol-version,mcp-session-id")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	r := preflight("https://app.example")
	if r.StatusCode/100 != 2 || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(r.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.ToLower(r.Header.Get("Access-Control-Allow-Headers")), "mcp-session-id") ||
		r.Header.Get("Access-Control-Max-Age") != "600" {
		t.Fatalf("preflight of an allowed Origin: %d %v", r.StatusCode, r.Header)
	}
	if r := preflight("https://evil.example"); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight of another Origin: %v, want no CORS grant", r.Header)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"page","version":"0"}}}`
	resp, body := send(t, ts.URL, http.MethodPost, init, map[string]string{"Origin": "https://app.example"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize from an allowed Origin: %d %v %.200s", resp.StatusCode, resp.Header, body)
	}
	resp, _ = send(t, ts.URL, http.MethodPost, init, map[string]string{"Origin": "https://evil.example"})
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("initialize from another Origin: %d %v, want 403 and no CORS grant", resp.StatusCode, resp.Header)
	}
}
