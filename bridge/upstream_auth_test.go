package bridge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/oidctest"
)

// TestHTTPUpstreamNeverGetsClientToken: an MCP-Flow server that checks
// tokens, with an HTTP upstream: the client's token (on its CONNECT) never
// reaches the upstream (docs/spec.md §10: the upstream gets the bridge's
// own credential, here none, then a configured one, never a client's).
func TestHTTPUpstreamNeverGetsClientToken(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	auth := verifier(t, p, serverAudience, "mcp")
	tok := p.Token(t, oidctest.TokenOptions{Audience: serverAudience, Scope: "mcp", Subject: "alice"})
	for _, own := range []string{"", "Bearer the-bridges-own"} {
		t.Run("upstream credential "+map[bool]string{true: "none", false: "configured"}[own == ""], func(t *testing.T) {
			up := newCredentialLog()
			ts := httptest.NewServer(up)
			t.Cleanup(ts.Close)
			cfg := flow.ServerConfig{Logger: flowtest.Quiet, Auth: auth}
			ucfg := bridge.HTTPUpstreamConfig{Endpoint: ts.URL, Logger: flowtest.Quiet}
			if own != "" {
				ucfg.Header = http.Header{"Authorization": {own}}
			}
			bridge.NewHTTPUpstream(ucfg).Configure(&cfg)
			srv := flowtest.Serve(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet,
				Token: func(context.Context) (string, error) { return tok, nil }})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			r, err := s.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": "hi"}})
			if err != nil || !strings.Contains(string(r.Result), "hi") {
				t.Fatalf("echo through the upstream: %v", err)
			}
			up.mu.Lock()
			defer up.mu.Unlock()
			if len(up.seen) == 0 {
				t.Fatal("no request reached the upstream")
			}
			for _, seen := range up.seen {
				if strings.Contains(seen, tok) || !strings.Contains(seen, " auth="+own+" ") {
					t.Fatalf("the upstream got %q, want auth=%q and never the client's token", seen, own)
				}
			}
		})
	}
}
