package bridge_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/oidctest"
)

// writeToken replaces the token file at once (rename), as a refresher
// would.
func writeToken(t *testing.T, file, tok string) {
	t.Helper()
	if err := os.WriteFile(file+".new", []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		t.Fatal(err)
	}
}

// stdioAuthFront runs a stdio front in process with the token file as its
// credential (StdioConfig.Token, as mcp-flow bridge stdio -token-file), its
// log records on the returned channel.
func stdioAuthFront(t *testing.T, srv *flow.Server, file string) (*lineHost, <-chan map[string]string) {
	t.Helper()
	records := make(chan map[string]string, 256)
	b := bridge.NewStdio(bridge.StdioConfig{URL: srv.URL(), Client: flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet},
		Token: bearer.FileSource(file), Logger: slog.New(recordHandler{ch: records}), ReconnectWait: 30 * time.Second,
		ReconnectMin: 50 * time.Millisecond, ReconnectMax: time.Second})
	return runLineHost(t, b, func() string { return "" }), records
}

// awaitRecord waits for a log record with message msg, skipping others.
func awaitRecord(t *testing.T, records <-chan map[string]string, msg string, d time.Duration) map[string]string {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case r := <-records:
			if r["msg"] == msg {
				return r
			}
		case <-timeout:
			t.Fatalf("no log %q in %v", msg, d)
		}
	}
}

const whoamiParams = `{"name":"whoami","arguments":{}}`

// TestStdioFrontTokenFile: the stdio front dials with the token in its
// token file, and reads the file again on every reconnection: alice's
// token expires (the server ends the session, flow.ReasonTokenExpired), the
// file now holds an expired token, which the server refuses: the refusal
// is logged with the server's challenge and the next attempt waits
// ReconnectMax (not the short backoff of a server coming back); once the
// file holds bob's token the front reconnects as bob.
func TestStdioFrontTokenFile(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	srv, sessions := authServer(t, verifier(t, p, serverAudience, "mcp"))
	file := filepath.Join(t.TempDir(), "token")
	writeToken(t, file, p.Token(t, oidctest.TokenOptions{Audience: serverAudience, Scope: "mcp", Subject: "alice", ExpiresIn: 3 * time.Second}))
	h, records := stdioAuthFront(t, srv, file)
	h.initialize()
	if line := h.ok("1", "tools/call", whoamiParams, 30*time.Second); !strings.Contains(line, `\"subject\":\"alice\"`) && !strings.Contains(line, `"subject":"alice"`) {
		t.Fatalf("whoami: %s", line)
	}
	writeToken(t, file, p.Token(t, oidctest.TokenOptions{Audience: serverAudience, Scope: "mcp", Subject: "alice", ExpiresIn: -time.Minute}))
	awaitRecord(t, records, "MCP-Flow session lost; its requests in flight failed, and the server's state for this host is gone "+
		"(resource subscriptions, the logging/setLevel level, requests from the server to the host, progress and execution streams)", 30*time.Second)
	ref := awaitRecord(t, records, "the MCP-Flow server refused the access token", 30*time.Second)
	if ref["status"] != "401" || !strings.Contains(ref["challenge"], `error="invalid_token"`) || !strings.Contains(ref["challenge"], "resource_metadata=") {
		t.Fatalf("the refusal was logged as %v", ref)
	}
	t.Logf("refusal logged: %v", ref)
	if r := awaitRecord(t, records, "reconnection failed", 10*time.Second); r["next"] != "1s" {
		t.Fatalf("after a refusal the next attempt is in %s, want ReconnectMax (1s): %v", r["next"], r)
	}
	writeToken(t, file, p.Token(t, oidctest.TokenOptions{Audience: serverAudience, Scope: "mcp", Subject: "bob"}))
	awaitRecord(t, records, "reconnected to the MCP-Flow server; the host's initialize was sent again", 30*time.Second)
	if line := h.ok("2", "tools/call", whoamiParams, 30*time.Second); !strings.Contains(line, `"subject":"bob"`) && !strings.Contains(line, `\"subject\":\"bob\"`) {
		t.Fatalf("whoami after the token file was rewritten: %s", line)
	}
	if got := sessions.get(); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Fatalf("the server's sessions were of %v, want alice's then bob's", got)
	}
}

// TestStdioFrontRefusedAtInitialize: a token the server refuses (signed by
// a key not in the issuer's JWKS) fails the host's initialize with an error
// that carries the server's challenge (never the token), and the refusal
// is logged.
func TestStdioFrontRefusedAtInitialize(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	srv, _ := authServer(t, verifier(t, p, serverAudience, "mcp"))
	file := filepath.Join(t.TempDir(), "token")
	tok := p.Token(t, oidctest.TokenOptions{Audience: serverAudience, Scope: "mcp", Subject: "mallory", Foreign: true})
	writeToken(t, file, tok)
	h, records := stdioAuthFront(t, srv, file)
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	m, line := h.response("0", 30*time.Second)
	if m.Error == nil || !strings.Contains(m.Error.Message, "401") || !strings.Contains(m.Error.Message, "resource_metadata=") || strings.Contains(line, tok) {
		t.Fatalf("initialize with a refused token: %s", line)
	}
	t.Logf("initialize answered: %s", m.Error.Message)
	awaitRecord(t, records, "the MCP-Flow server refused the access token", 10*time.Second)
}
