package flow_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/quic-go/quic-go/http3"
)

// TestHTTPHandlerOverHTTP3: ServerConfig.HTTPHandler answers the plain
// HTTP/3 requests (no CONNECT) of the server's UDP listener, on its path and
// elsewhere (spec §10.1), while CONNECTs stay the server's: a session still
// opens and a disallowed Origin still gets 403. Without it a plain request
// gets 405 at the path and 404 elsewhere, as before.
func TestHTTPHandlerOverHTTP3(t *testing.T) {
	do := func(t *testing.T, method, url string) (int, string) {
		t.Helper()
		tr := &http3.Transport{TLSClientConfig: clientTLS(t)}
		defer tr.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		}
		req, err := http.NewRequestWithContext(ctx, method, url, body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s %s over HTTP/3: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProtoMajor != 3 {
			t.Errorf("answered over %s, want HTTP/3", resp.Proto)
		}
		return resp.StatusCode, string(b)
	}
	elsewhere := func(srv *flow.Server) string { return strings.TrimSuffix(srv.URL(), flow.DefaultPath) + "/elsewhere" }

	t.Run("handler", func(t *testing.T) {
		srv := startServer(t, func(c *flow.ServerConfig) {
			c.HTTPHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				w.Header().Set("X-Plain", "yes")
				w.WriteHeader(http.StatusTeapot)
				io.WriteString(w, r.Method+" "+r.URL.Path+" "+string(b))
			})
		})
		for _, c := range []struct{ method, url, want string }{
			{"POST", srv.URL(), "POST " + flow.DefaultPath + ` {"jsonrpc":"2.0","id":1,"method":"ping"}`},
			{"GET", srv.URL(), "GET " + flow.DefaultPath + " "},
			{"DELETE", elsewhere(srv), "DELETE /elsewhere "},
		} {
			if code, body := do(t, c.method, c.url); code != http.StatusTeapot || body != c.want {
				t.Errorf("%s %s: %d %q, want the handler's 418 %q", c.method, c.url, code, body, c.want)
			}
		}
		// CONNECTs are still the server's, its Origin check included.
		if got := textOf(t, callTool(t, dial(t, srv, nil), "echo", map[string]any{"text": "hi"})); got != "hi" {
			t.Errorf("echo over a session with a handler set: %q, want hi", got)
		}
		if _, resp, err := dialRaw(t, srv, http.Header{"Origin": {"https://evil.example"}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("CONNECT from a foreign origin with a handler set: resp %v, err %v; want 403", resp, err)
		}
	})
	t.Run("nil", func(t *testing.T) {
		srv := startServer(t, nil)
		if code, body := do(t, "POST", srv.URL()); code != http.StatusMethodNotAllowed {
			t.Errorf("POST at the path without a handler: %d %q, want 405", code, body)
		}
		if code, body := do(t, "GET", elsewhere(srv)); code != http.StatusNotFound {
			t.Errorf("GET elsewhere without a handler: %d %q, want 404", code, body)
		}
	})
}
