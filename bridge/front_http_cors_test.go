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

// corsFront is an HTTP front that allows the Origin https://app.example.
func corsFront(t *testing.T) *httptest.Server {
	t.Helper()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	h := bridge.NewHTTPFront(bridge.HTTPConfig{AllowedOrigins: []string{"https://app.example"},
		Stdio: bridge.StdioConfig{URL: srv.URL(), Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: flowtest.Quiet}})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { h.Close() })
	return ts
}

// corsPreflight sends a browser's preflight of a POST from origin asking
// for headers.
func corsPreflight(t *testing.T, url, origin, headers string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodOptions, url, nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", headers)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestHTTPFrontCORS (spec §9): a page of an allowed Origin may use the
// front from fetch (the js/ transport's fallback, spec §10.2): its
// preflight is answered with that Origin, the methods and the MCP headers,
// and its actual requests carry Access-Control-Allow-Origin and expose
// Mcp-Session-Id. A page of another Origin gets no CORS grant on either,
// and its actual request is still 403.
func TestHTTPFrontCORS(t *testing.T) {
	t.Parallel()
	ts := corsFront(t)
	preflight := func(origin string) *http.Response {
		t.Helper()
		// Sorted and lower case, as browsers send it (Fetch standard).
		return corsPreflight(t, ts.URL, origin, "authorization,content-type,mcp-protocol-version,mcp-session-id")
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

// TestHTTPFrontCORSParamHeaders (spec §11.6): a page's preflight for a
// 2026-07-28 tools/call whose tool has x-mcp-header arguments asks for
// Mcp-Param-{Name} headers, which the front grants, reflecting exactly
// the headers asked for, when each is one of the front's own or the
// prefix and a token; one asking for anything else besides, an empty or
// non-token name, or from another Origin, gets no grant.
func TestHTTPFrontCORSParamHeaders(t *testing.T) {
	t.Parallel()
	ts := corsFront(t)
	preflight := func(origin, headers string) *http.Response {
		t.Helper()
		return corsPreflight(t, ts.URL, origin, headers)
	}
	// Sorted and lower case, as browsers send it (Fetch standard).
	for _, asked := range []string{
		"content-type,mcp-method,mcp-name,mcp-param-region,mcp-protocol-version",
		"mcp-param-!#$%&'*+-.^_`|~az09,mcp-param-count",
		"Mcp-Param-Region, MCP-PROTOCOL-VERSION", // another client's spelling
	} {
		r := preflight("https://app.example", asked)
		if r.StatusCode/100 != 2 || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
			r.Header.Get("Access-Control-Allow-Headers") != asked || r.Header.Get("Access-Control-Max-Age") != "600" {
			t.Errorf("preflight asking for %q: %d %v; want a grant of exactly those", asked, r.StatusCode, r.Header)
		}
	}
	for _, asked := range []string{
		"mcp-param-region,x-evil",
		"mcp-param-",
		"mcp-param-a:b",
		"mcp-param-région",
		"mcp-paramregion",
	} {
		if r := preflight("https://app.example", asked); r.Header.Get("Access-Control-Allow-Origin") != "" || r.Header.Get("Access-Control-Allow-Headers") != "" {
			t.Errorf("preflight asking for %q: %v; want no grant", asked, r.Header)
		}
	}
	if r := preflight("https://evil.example", "mcp-param-region"); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight of another Origin: %v; want no grant", r.Header)
	}
}
