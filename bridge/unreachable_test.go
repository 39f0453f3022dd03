package bridge_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	neturl "net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestHTTPFrontUnreachable: an HTTP front that cannot reach its MCP-Flow
// server (spec §10, "Reaching the server") answers its clients with a
// JSON-RPC error naming the cause and its fix, and logs it in one record:
// a certificate the front does not trust (a 2025 client's initialize, and
// a 2026-07-28 client's request, -32006 after -reconnect-wait), and a URL
// path where the server has no endpoint (HTTP 404).
func TestHTTPFrontUnreachable(t *testing.T) {
	t.Parallel()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	pinned, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	wrongPath, _ := neturl.Parse(srv.URL())
	wrongPath.Path = "/nope"
	for _, c := range []struct {
		name, url, why, fix string
		client              flow.ClientConfig
		stateless           bool
	}{
		{"untrusted", srv.URL(), "TLS certificate not trusted", "-cert-hash", flow.ClientConfig{Logger: flowtest.Quiet}, false},
		{"untrusted-2026", srv.URL(), "TLS certificate not trusted", "-ca", flow.ClientConfig{Logger: flowtest.Quiet}, true},
		{"404", wrongPath.String(), "HTTP 404 Not Found", "mcp-flow-server serves /mcp-flow", flow.ClientConfig{TLSConfig: pinned, Logger: flowtest.Quiet}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			records := make(chan map[string]string, 256)
			h := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: c.url, Client: c.client,
				Logger: slog.New(recordHandler{ch: records, only: "cannot reach the MCP-Flow server"}), ReconnectWait: 500 * time.Millisecond}})
			ts := httptest.NewServer(h)
			t.Cleanup(func() { ts.CloseClientConnections(); h.Close(); ts.Close() })
			var body string
			if c.stateless {
				_, body = send(t, ts.URL, "POST", modernBody(1, "tools/list", ""), modern("tools/list", ""))
				if d := sseData(body); len(d) == 1 {
					body = d[0]
				}
			} else {
				_, body = send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
					map[string]string{"MCP-Protocol-Version": "2025-11-25"})
			}
			var m struct {
				Error *struct {
					Code    int
					Message string
					Data    map[string]string
				}
			}
			if err := json.Unmarshal([]byte(body), &m); err != nil || m.Error == nil {
				t.Fatalf("answer %q (%v)", body, err)
			}
			want := "cannot reach the MCP-Flow server " + c.url + ": " + c.why
			if !strings.HasPrefix(m.Error.Message, want) || !strings.Contains(m.Error.Message, c.fix) || strings.Contains(m.Error.Message, "flow: dial") {
				t.Fatalf("JSON-RPC error %q, want it to start %q and name %q", m.Error.Message, want, c.fix)
			}
			if c.stateless && m.Error.Code != -32006 || !c.stateless && (m.Error.Code != -32603 || m.Error.Data["reason"] != c.why) {
				t.Fatalf("JSON-RPC error %d %v", m.Error.Code, m.Error.Data)
			}
			r := <-records // logged before the answer went out
			if r["why"] != c.why || !strings.Contains(r["fix"], c.fix) || r["server"] != c.url {
				t.Fatalf("logged as %v", r)
			}
			t.Logf("%d %s", m.Error.Code, m.Error.Message)
		})
	}
}

// initializeWait reads the wait out of the front's "no answer to initialize
// within D" error.
var initializeWait = regexp.MustCompile(`no answer to initialize within ([0-9.]+m?s)\b`)

// TestStdioFrontSlowInitializeIsNotUnreachable: a server that answers QUIC
// but not initialize within the handshake timeout is no unreachable server:
// the stdio front with ExitIfUnreachable answers the host's initialize with
// that cause and goes on, and the host's next initialize succeeds once the
// server answers.
func TestStdioFrontSlowInitializeIsNotUnreachable(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet,
		OnInitialize: func(ctx context.Context, _ *flow.Session, _ json.RawMessage) (*flow.InitializeResult, error) {
			select {
			case <-release:
				return &flow.InitializeResult{ProtocolVersion: "2025-11-25", ServerInfo: flow.Implementation{Name: "slow", Version: "1"}}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}})
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the server closes
	b := bridge.NewStdio(bridge.StdioConfig{URL: srv.URL(), ExitIfUnreachable: true, Logger: flowtest.Quiet,
		Client: flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet, Limits: flow.Limits{HandshakeTimeout: time.Second}}})
	h := runLineHost(t, b, func() string { return "" })
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	m, line := h.response("0", 30*time.Second)
	// The message names how long the front waited, rounded to 100 ms: the
	// 1 s HandshakeTimeout, or a little more on a loaded machine (1.1s seen).
	if m.Error == nil {
		t.Fatalf("initialize of a server that does not answer it: %s", line)
	}
	waited := initializeWait.FindStringSubmatch(m.Error.Message)
	if waited == nil || !strings.Contains(m.Error.Message, "-handshake-timeout") {
		t.Fatalf("initialize of a server that does not answer it: %s", line)
	}
	if d, err := time.ParseDuration(waited[1]); err != nil || d < time.Second {
		t.Fatalf("initialize of a server that does not answer it: waited %q, want the 1 s HandshakeTimeout or more: %s", waited[1], line)
	}
	t.Logf("answered: %s", m.Error.Message)
	once.Do(func() { close(release) })
	h.initialize() // the front is still there
}
