package bridge_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestHTTPFrontObserve: HTTPConfig.Observe gets one EventHTTPRequest per
// request the front answers, with its HTTP method, era and status: a
// preflight, refusals, a 2025 session's initialize, notification and
// DELETE, and a 2026-07-28 call.
func TestHTTPFrontObserve(t *testing.T) {
	t.Parallel()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	var mu sync.Mutex
	var got []string
	h := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(),
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: flowtest.Quiet},
		Observe: func(e flow.Event) {
			mu.Lock()
			got = append(got, fmt.Sprintf("%s %s %s %d", e.Kind, e.Method, e.Outcome, e.Code))
			mu.Unlock()
		}})
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer h.Close()

	send(t, ts.URL, "OPTIONS", "", map[string]string{"Origin": "http://127.0.0.1:1234", "Access-Control-Request-Method": "POST"})
	send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Origin": "https://evil.example"})
	send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	r, _ := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	sid := r.Header.Get("MCP-Session-Id")
	send(t, ts.URL, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"MCP-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
	send(t, ts.URL, "DELETE", "", map[string]string{"MCP-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
	if r, body := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}); r.StatusCode != http.StatusOK {
		t.Fatalf("a 2026-07-28 tools/call: %d %.300s", r.StatusCode, body)
	}
	send(t, ts.URL, "GET", "", map[string]string{"MCP-Protocol-Version": "2026-07-28"})

	want := []string{
		"http-request OPTIONS 2025 204",
		"http-request POST 2025 403",
		"http-request POST 2025 400",
		"http-request POST 2025 200",
		"http-request POST 2025 202",
		"http-request DELETE 2025 204",
		"http-request POST 2026-07-28 200",
		"http-request GET 2026-07-28 405",
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n%q\nwant:\n%q", got, want)
	}
}
