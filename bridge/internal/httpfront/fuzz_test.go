package httpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// FuzzHTTPFrontRequest feeds the HTTP front requests made of fuzzed
// headers and bodies (issue 11): whatever comes, it answers with a status
// the transport defines, a JSON answer is valid JSON-RPC, and nothing
// panics. The session the requests name has a core that was never
// initialized, so requests are answered at once without a server; bodies
// naming initialize are skipped (they would dial one).
func FuzzHTTPFrontRequest(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`[{"jsonrpc":"2.0","id":"a","method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}}`,
		`[]`, `{`, `null`, `[[[[[[[[1]]]]]]]]`, "\xff\xfe",
	} {
		for m := range uint8(4) {
			f.Add(m, uint8(1), "2025-03-26", "application/json, text/event-stream", []byte(seed))
		}
	}
	f.Add(uint8(1), uint8(0), "", "text/event-stream", []byte(nil))
	f.Add(uint8(1), uint8(3), "2025-11-25", "text/event-stream", []byte(nil))
	h := NewHTTPFront(HTTPConfig{Stdio: core.StdioConfig{URL: "https://127.0.0.1:1/mcp-flow", Logger: flowtest.Quiet}, MaxBody: 1 << 20})
	f.Cleanup(func() { h.Close() })
	s := h.newSession(false, httptest.NewRequest("POST", "/mcp", nil))
	if !h.register(s) {
		f.Fatal("no room for the fuzzed session")
	}
	s.core.SetVersion("2025-03-26") // batches allowed: the widest parsing
	cancelled, cancel := context.WithCancel(context.Background())
	cancel() // streams return at once; their requests are still answered
	f.Fuzz(func(t *testing.T, method, sess uint8, version, accept string, body []byte) {
		if bytes.Contains(body, []byte("initialize")) {
			t.Skip("initialize dials a server")
		}
		methods := []string{"POST", "GET", "DELETE", "PUT"}
		req := httptest.NewRequestWithContext(cancelled, methods[int(method)%len(methods)], "/mcp", bytes.NewReader(body))
		switch sess % 4 {
		case 1:
			req.Header.Set("MCP-Session-Id", s.id)
		case 2:
			req.Header.Set("MCP-Session-Id", "unknown")
		case 3:
			req.Header.Set("MCP-Session-Id", s.id)
			req.Header.Set("Last-Event-ID", version)
		}
		if version != "" {
			req.Header.Set("MCP-Protocol-Version", version)
		}
		req.Header.Set("Accept", accept)
		if req.Method == "DELETE" && sess%4 != 2 {
			req.Header.Del("MCP-Session-Id") // keep the fuzzed session
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		allowed := []int{200, 202, 204, 400, 404, 405, 406, 409, 413, 503}
		if !slices.Contains(allowed, w.Code) {
			t.Fatalf("status %d for %s %q", w.Code, req.Method, body)
		}
		if w.Header().Get("Content-Type") == "application/json" {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || string(m["jsonrpc"]) != `"2.0"` {
				t.Fatalf("a JSON answer that is no JSON-RPC message: %q (%v)", w.Body.Bytes(), err)
			}
		}
	})
}
