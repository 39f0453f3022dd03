package bridge_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/browsertest"
)

// corsPage is a page that POSTs two 2026-07-28 tools/call of deploy to
// the front at FRONT with its Mcp-Param-* headers (the second with a
// Region that differs from its argument) and leaves each status and body
// in window.__result; a fetch the browser refuses (CORS) leaves its error.
const corsPage = `<!doctype html><script type="module">
const meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}};
async function call(id, region) {
  const r = await fetch(FRONT, {method: "POST", headers: {
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "deploy",
    "Mcp-Param-Region": region, "Mcp-Param-Count": "3"},
    body: JSON.stringify({jsonrpc: "2.0", id, method: "tools/call", params: {name: "deploy", arguments: {region: "us-west1", count: 3}, _meta: meta}})});
  return {status: r.status, body: await r.text()};
}
try {
  window.__result = {ok: await call(1, "us-west1"), mismatch: await call(2, "eu-west1")};
} catch (e) {
  window.__result = {error: String(e)};
}
</script>`

// TestHTTPFrontCORSParamHeadersChromium: a page of another (loopback)
// origin in headless Chromium sends a 2026-07-28 tools/call with
// Mcp-Param-* headers through the HTTP front (spec §9, §11.6): the
// browser's preflight is granted, the call is answered, and a call whose
// header differs from its argument gets the front's 400 (-32020), which the
// page can read. Seen failing (the fetch refused by CORS) with the
// front's Mcp-Param-* grant off.
func TestHTTPFrontCORSParamHeadersChromium(t *testing.T) {
	t.Parallel()
	chromium := browsertest.Chromium(t)
	browsertest.NPM(t, "../js", "node_modules/playwright-core")
	p := newParamToolServer(t)
	front := statelessFront(t, p.srv, p.sessions)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, strings.Replace(corsPage, "FRONT", fmt.Sprintf("%q", front), 1))
	}))
	t.Cleanup(page.Close)
	var res struct {
		Error        string
		OK, Mismatch struct {
			Status int
			Body   string
		}
		Console []string
	}
	browsertest.Drive(t, "../js", "test/run.mjs", chromium, page.URL, 30*time.Second, &res) // 30 s: a hang guard (the page takes under 1 s)
	if res.Error != "" || res.OK.Status != http.StatusOK || !strings.Contains(res.OK.Body, "deployed") {
		t.Fatalf("the page's call with Mcp-Param-* headers: %+v", res)
	}
	if res.Mismatch.Status != http.StatusBadRequest || !strings.Contains(res.Mismatch.Body, "-32020") {
		t.Fatalf("the page's call whose Mcp-Param-Region differs: %+v; want 400 with -32020", res.Mismatch)
	}
}
