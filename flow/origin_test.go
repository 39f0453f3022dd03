package flow_test

import (
	"net/http"
	"testing"

	"github.com/mcp-flow/mcp-flow/flow"
)

// TestOriginPolicy: one policy for browsers (spec §9): a page on this
// machine may connect to a server listening on loopback without
// -allow-origin; no other page may unless allowed; a server listening on
// another address allows only what it is told.
func TestOriginPolicy(t *testing.T) {
	loopbackPages := []string{"http://127.0.0.1:5173", "http://localhost:8080", "https://localhost", "http://[::1]:3000", "http://127.0.0.2:1"}
	foreign := []string{"https://evil.example", "http://127.0.0.1.evil.example", "http://localhost.evil.example:80", "null", "http://10.0.0.1:8080"}
	t.Run("loopback listener", func(t *testing.T) {
		srv := startServer(t, nil)
		for _, o := range loopbackPages {
			if _, _, err := dialRaw(t, srv, http.Header{"Origin": {o}}); err != nil {
				t.Errorf("loopback page %s refused: %v", o, err)
			}
		}
		for _, o := range foreign {
			if _, resp, err := dialRaw(t, srv, http.Header{"Origin": {o}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Errorf("origin %s: resp %v, err %v; want 403", o, resp, err)
			}
		}
	})
	t.Run("other listener", func(t *testing.T) {
		srv := startServer(t, func(c *flow.ServerConfig) {
			c.Addr = "0.0.0.0:0"
			c.AllowedOrigins = []string{"https://app.example"}
		})
		for _, o := range append([]string{"http://127.0.0.1:5173", "http://localhost:8080"}, foreign...) {
			if _, resp, err := dialRaw(t, srv, http.Header{"Origin": {o}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Errorf("origin %s on a 0.0.0.0 listener: resp %v, err %v; want 403", o, resp, err)
			}
		}
		if _, _, err := dialRaw(t, srv, http.Header{"Origin": {"https://app.example"}}); err != nil {
			t.Errorf("allowed origin refused: %v", err)
		}
	})
}

func TestLoopbackOrigin(t *testing.T) {
	for o, want := range map[string]bool{
		"http://127.0.0.1:1": true, "https://localhost": true, "http://[::1]:9": true,
		"http://127.0.0.1.evil.example": false, "null": false, "": false, "file://": false, "http://0.0.0.0:80": false,
	} {
		if got := flow.LoopbackOrigin(o); got != want {
			t.Errorf("LoopbackOrigin(%q) = %v, want %v", o, got, want)
		}
	}
}
