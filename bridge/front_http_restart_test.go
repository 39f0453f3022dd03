package bridge_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// sse reads the JSON-RPC messages of an SSE body as they come.
func sseMessages(body io.Reader) <-chan hostMsg {
	ch := make(chan hostMsg, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m hostMsg
				if json.Unmarshal([]byte(data), &m) == nil {
					ch <- m
				}
			}
		}
	}()
	return ch
}

// TestHTTPFrontAfterServerRestart: when the server behind the HTTP front is
// killed, a POST in flight gets its error at once on its SSE stream, the
// session's GET stream ends, and the session id gets 404 from then on; the
// client's new initialize reaches the restarted server. A graceful restart
// likewise.
func TestHTTPFrontAfterServerRestart(t *testing.T) {
	srv := startServer(t, buildServer(t))
	hash, _ := certs.ParseHash(srv.hash)
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{hash}})
	quiet := flowtest.Quiet
	front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.url,
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: quiet, Limits: flow.Limits{PeerIdleTimeout: liveness, KeepAlivePeriod: keepAlive}}, Logger: quiet}})
	ts := httptest.NewServer(front)
	t.Cleanup(ts.Close) // after the streams' bodies are closed (cleanups run last first)
	initialize := func() string {
		t.Helper()
		r, body := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
		id := r.Header.Get("MCP-Session-Id")
		if r.StatusCode != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d %s; server stderr:\n%s", r.StatusCode, body, srv.logs())
		}
		send(t, ts.URL, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"MCP-Session-Id": id})
		return id
	}
	echo := func(sid string) int {
		r, body := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, map[string]string{"MCP-Session-Id": sid})
		if r.StatusCode == http.StatusOK && !strings.Contains(body, `"text":"hi"`) {
			t.Fatalf("echo: %s", body)
		}
		return r.StatusCode
	}
	open := func(method, sid, body string) *http.Response {
		req, _ := http.NewRequest(method, ts.URL, strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("MCP-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", method, resp, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	sid := initialize()
	if c := echo(sid); c != http.StatusOK {
		t.Fatalf("echo: %d", c)
	}
	get := sseMessages(open("GET", sid, "").Body)
	post := sseMessages(open("POST", sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"steps":1000,"delayMs":100},"_meta":{"progressToken":"t"}}}`).Body)
	if m := <-post; m.Method != "notifications/progress" {
		t.Fatalf("want progress first, got %+v", m)
	}
	t0 := time.Now()
	srv.kill()
	timeout := time.After(lostBound)
	for answered, getEnded := false, false; !answered || !getEnded; {
		select {
		case m, ok := <-post:
			if !ok {
				if !answered {
					t.Fatal("the POST stream ended without an answer")
				}
				post = nil
				continue
			}
			if m.Method != "" {
				continue
			}
			if m.Error == nil || m.Error.Code != -32603 || !strings.Contains(m.Error.Message, srv.url) {
				t.Fatalf("answer to the POST in flight: %+v", m)
			}
			answered = true
		case _, ok := <-get:
			if !ok {
				getEnded = true
				get = nil
			}
		case <-timeout:
			t.Fatalf("%v after SIGKILL: answer %v, GET stream ended %v", lostBound, answered, getEnded)
		}
	}
	t.Logf("POST in flight answered and GET stream ended %v after SIGKILL", time.Since(t0))
	if c := echo(sid); c != http.StatusNotFound {
		t.Fatalf("the session whose server session ended answered %d, want 404", c)
	}
	srv.start()
	sid2 := initialize()
	if c := echo(sid2); c != http.StatusOK {
		t.Fatalf("echo on the new session: %d", c)
	}

	// Graceful: SIGTERM ends the session too, and its GET stream.
	get = sseMessages(open("GET", sid2, "").Body)
	srv.term()
	for range get {
	}
	srv.start()
	if c := echo(sid2); c != http.StatusNotFound {
		t.Fatalf("the session whose server shut down answered %d, want 404", c)
	}
	sid3 := initialize()
	if c := echo(sid3); c != http.StatusOK {
		t.Fatalf("echo after the graceful restart: %d", c)
	}
	if r, _ := send(t, ts.URL, "DELETE", "", map[string]string{"MCP-Session-Id": sid3}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", r.StatusCode)
	}
}
