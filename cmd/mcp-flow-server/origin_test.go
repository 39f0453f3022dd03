package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/oidctest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/quic-go/quic-go/http3"
)

// TestOneOriginStreamableHTTP (issue 26): the server's TCP port, the same
// as its UDP one, serves Streamable HTTP over HTTP/2 at the WebTransport
// path, with Alt-Svc: h3=":PORT" on every response (spec §10.1): a 2025
// session (initialize, then tools/call echo in it) and a 2026-07-28
// request. The server then drains on SIGTERM and exits 0.
func TestOneOriginStreamableHTTP(t *testing.T) {
	url, hash, stderr, srv := runServer(t, buildServer(t))
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	wantAltSvc := `h3=":` + u.Port() + `"`
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		TLSClientConfig: flowtest.PinnedTLS(t, hash), ForceAttemptHTTP2: true}}
	defer client.CloseIdleConnections()
	post := poster(t, client, url, 2, wantAltSvc, stderr)

	sessionEcho(t, post, "HTTP/2")
	if r, body := post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}); r.StatusCode != http.StatusOK || !strings.Contains(body, `"text":"hi"`) {
		t.Fatalf("a 2026-07-28 tools/call echo: %d %.300s, want hi", r.StatusCode, body)
	}
	// Every response of the TCP listener says where HTTP/3 is, a 404 too.
	resp, err := client.Get("https://" + u.Host + "/elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Alt-Svc"); resp.StatusCode != http.StatusNotFound || got != wantAltSvc {
		t.Errorf("GET /elsewhere: %d, Alt-Svc %q; want 404 and %q", resp.StatusCode, got, wantAltSvc)
	}
	// The server drains both transports (the HTTP session is still open)
	// and exits 0.
	select {
	case err := <-srv.signal(syscall.SIGTERM):
		if err != nil || !strings.Contains(stderr.String(), "shut down cleanly") {
			t.Fatalf("server exit after SIGTERM: %v, want 0 after a clean drain; stderr:\n%s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("server still running 20 s after SIGTERM; stderr:\n%s", stderr)
	}
	if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		c.Close()
		t.Error("something still listens on the TCP port after the server exited")
	}
}

// poster returns a function that POSTs a JSON-RPC body with the MCP
// headers and hdr (a "Host" entry sets the Host header) to url, and checks that the answer came over HTTP/proto
// with Alt-Svc altSvc.
func poster(t *testing.T, client *http.Client, url string, proto int, altSvc string, stderr fmt.Stringer) func(body string, hdr map[string]string) (*http.Response, string) {
	return func(body string, hdr map[string]string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest("POST", url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		r, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST %s over HTTP/%d: %v; server stderr:\n%s", url, proto, err, stderr)
		}
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if r.ProtoMajor != proto {
			t.Errorf("answered over %s, want HTTP/%d", r.Proto, proto)
		}
		if got := r.Header.Get("Alt-Svc"); got != altSvc {
			t.Errorf("Alt-Svc %q, want %q", got, altSvc)
		}
		return r, string(b)
	}
}

// sessionEcho runs a 2025 session through post: initialize (the server's
// info and a session id), notifications/initialized (202), and a
// tools/call echo in the session that answers hi.
func sessionEcho(t *testing.T, post func(body string, hdr map[string]string) (*http.Response, string), over string) {
	t.Helper()
	r, body := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`,
		map[string]string{"MCP-Protocol-Version": "2025-11-25"})
	sid := r.Header.Get("Mcp-Session-Id")
	if r.StatusCode != http.StatusOK || sid == "" || !strings.Contains(body, `"serverInfo":{"name":"mcp-flow-server"`) {
		t.Fatalf("initialize over %s: %d, session %q, %.300s; want 200, a session and the server's info", over, r.StatusCode, sid, body)
	}
	session := map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid}
	if r, body := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session); r.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized over %s: %d %.300s, want 202", over, r.StatusCode, body)
	}
	if r, body := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, session); r.StatusCode != http.StatusOK || !strings.Contains(body, `"text":"hi"`) {
		t.Fatalf("tools/call echo in the session over %s: %d %.300s, want hi", over, r.StatusCode, body)
	}
}

// TestOneOriginStreamableHTTP3: a client that follows Alt-Svc to the UDP
// port with plain Streamable HTTP over HTTP/3 (no CONNECT) is served there
// by the same front as on TCP (spec §10.1), Alt-Svc included: a 2025
// session, initialize then tools/call echo in it. The server then drains
// on SIGTERM and exits 0.
func TestOneOriginStreamableHTTP3(t *testing.T) {
	url, hash, stderr, srv := runServer(t, buildServer(t))
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http3.Transport{TLSClientConfig: flowtest.PinnedTLS(t, hash)}
	defer tr.Close()
	client := &http.Client{Timeout: 20 * time.Second, Transport: tr}
	post := poster(t, client, url, 3, `h3=":`+u.Port()+`"`, stderr)

	sessionEcho(t, post, "HTTP/3")
	select {
	case err := <-srv.signal(syscall.SIGTERM):
		if err != nil || !strings.Contains(stderr.String(), "shut down cleanly") {
			t.Fatalf("server exit after SIGTERM: %v, want 0 after a clean drain; stderr:\n%s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("server still running 20 s after SIGTERM; stderr:\n%s", stderr)
	}
}

// TestNoTCPFlag: with -no-tcp nothing listens on TCP (a dial is refused),
// MCP-Flow is served on UDP as before, and a plain HTTP/3 request there
// gets 405 (no front, spec §10.1).
func TestNoTCPFlag(t *testing.T) {
	url, hash, stderr, srv := runServer(t, buildServer(t), "-no-tcp")
	defer func() {
		if err := <-srv.signal(syscall.SIGTERM); err != nil {
			t.Errorf("server exit: %v; stderr:\n%s", err, stderr)
		}
	}()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("a TCP dial to %s succeeded with -no-tcp", u.Host)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("TCP dial with -no-tcp: %v, want connection refused", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: flowtest.PinnedTLS(t, hash), Logger: flowtest.Quiet})
	if err != nil {
		t.Fatalf("MCP-Flow with -no-tcp: %v; stderr:\n%s", err, stderr)
	}
	s.Close()
	tr := &http3.Transport{TLSClientConfig: flowtest.PinnedTLS(t, hash)}
	defer tr.Close()
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("a plain POST over HTTP/3 with -no-tcp: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("a plain POST over HTTP/3 with -no-tcp: %d, want 405", resp.StatusCode)
	}
}

// TestTCPPortTaken: when the TCP port of -addr is taken the server says so
// on stderr, naming -no-tcp, and exits 1 without announcing a URL; with
// -no-tcp (the operator's choice) it serves on UDP.
func TestTCPPortTaken(t *testing.T) {
	bin := buildServer(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	dir := t.TempDir()
	cmd := exec.Command(bin, "-addr", addr, "-cert-dir", dir, "-root", dir)
	stderr := &flowtest.SyncBuffer{}
	cmd.Stderr = stderr
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.Output(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the server still runs 20 s after starting on a taken TCP port; stderr:\n%s", stderr)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1; stderr:\n%s", err, stderr)
	}
	if len(out) != 0 {
		t.Errorf("stdout %q, want nothing (no URL announced)", out)
	}
	if msg := stderr.String(); !strings.Contains(msg, "cannot listen on TCP "+addr) || !strings.Contains(msg, "-no-tcp") {
		t.Errorf("stderr does not name the TCP address and -no-tcp:\n%s", msg)
	}
	_, _, stderr, srv := runServer(t, bin, "-addr", addr, "-no-tcp")
	if err := <-srv.signal(syscall.SIGTERM); err != nil {
		t.Errorf("with -no-tcp on the taken port: exit %v; stderr:\n%s", err, stderr)
	}
}

// TestCurlHTTP2 (issue 26): the README's curl command, `curl --http2 -k`
// with the MCP headers and an initialize body, gets a Streamable HTTP
// answer over HTTP/2 from the server's TCP side, with Alt-Svc naming the
// UDP port and a session id.
func TestCurlHTTP2(t *testing.T) {
	curl := browsertest.Debian(t, "curl", "curl")
	url, _, stderr, _ := runServer(t, buildServer(t))
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, curl, "--http2", "-k", "-sS", "-i", url,
		"-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream",
		"-H", "MCP-Protocol-Version: 2025-11-25",
		"-d", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}`).CombinedOutput()
	got := strings.ReplaceAll(string(out), "\r\n", "\n")
	for _, want := range []string{"HTTP/2 200", "\nalt-svc: h3=\":" + u.Port() + "\"\n", "\nmcp-session-id: ", `"serverInfo":{"name":"mcp-flow-server"`} {
		if err != nil || !strings.Contains(got, want) {
			t.Fatalf("curl --http2: %v; want %q in:\n%s\nserver stderr:\n%s", err, want, got, stderr)
		}
	}
}

// tokenTransport sends the token held at the moment of each request
// (a client that refreshes its token mid-session).
type tokenTransport struct {
	tok  atomic.Pointer[string]
	base http.RoundTripper
}

func (tt *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+*tt.tok.Load())
	return tt.base.RoundTrip(r)
}

// sdkWhoami calls whoami in cs and returns the subject the server saw.
func sdkWhoami(t *testing.T, ctx context.Context, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("whoami: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var w demotools.Whoami
	if json.Unmarshal(b, &w) != nil || !w.Authenticated {
		t.Fatalf("whoami answered %s", b)
	}
	return w.Subject
}

// TestOneOriginAuth: with -auth-*, the server's TCP side (spec §10.1) asks
// its clients for the same tokens as its CONNECTs (401 naming the same
// resource metadata, which it serves; 403 for a missing scope), and passes
// each client's own token through: whoami in a 2025 session answers the
// client's subject, another subject's token on that session id gets 404,
// and 2026-07-28 clients are each their own subject. When the client's
// token expires the server ends the front's MCP-Flow session
// (flow.ReasonTokenExpired); the front dials it again with the client's
// refreshed token, and the client's session (its id) goes on.
func TestOneOriginAuth(t *testing.T) {
	p := oidctest.Start(t)
	url, hash, stderr, _ := runServer(t, buildServer(t), "-auth-issuer", p.Issuer, "-auth-audience", testAudience, "-auth-scopes", "mcp:tools")
	tok := func(sub string, exp time.Duration) string {
		return p.Token(t, oidctest.TokenOptions{Audience: testAudience, Scope: "mcp:tools", Subject: sub, ExpiresIn: exp})
	}
	base := &http.Transport{TLSClientConfig: flowtest.PinnedTLS(t, hash), ForceAttemptHTTP2: true}
	defer base.CloseIdleConnections()
	plain := &http.Client{Timeout: 20 * time.Second, Transport: base}
	post := func(body string, hdr map[string]string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		r, err := plain.Do(req)
		if err != nil {
			t.Fatalf("POST: %v; stderr:\n%s", err, stderr)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		return r, string(b)
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`
	if r, _ := post(initialize, nil); r.StatusCode != 401 || r.Header.Get("WWW-Authenticate") != `Bearer resource_metadata="`+testMetadataURL+`"` {
		t.Fatalf("no token at the TCP side: %d, WWW-Authenticate %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}
	noScope := p.Token(t, oidctest.TokenOptions{Audience: testAudience, Scope: "other", Subject: "alice"})
	if r, _ := post(initialize, map[string]string{"Authorization": "Bearer " + noScope}); r.StatusCode != 403 || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Fatalf("a token without the scope: %d, WWW-Authenticate %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}

	// alice's 2025 session, with a token that expires soon.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tt := &tokenTransport{base: base}
	first := tok("alice", 3*time.Second)
	tt.tok.Store(&first)
	c := mcp.NewClient(&mcp.Implementation{Name: "origin-auth", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tt}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v; stderr:\n%s", err, stderr)
	}
	defer cs.Close()
	if got := sdkWhoami(t, ctx, cs); got != "alice" {
		t.Fatalf("whoami at the TCP side: %q, want alice (the client's own token passed through)", got)
	}
	bob := tok("bob", 0)
	if r, body := post(`{"jsonrpc":"2.0","id":7,"method":"ping"}`, map[string]string{"Authorization": "Bearer " + bob, "Mcp-Session-Id": cs.ID(), "MCP-Protocol-Version": "2025-11-25"}); r.StatusCode != 404 {
		t.Fatalf("bob's token on alice's session: %d %s, want 404", r.StatusCode, body)
	}
	for _, sub := range []string{"alice", "bob"} {
		r, body := post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			map[string]string{"Authorization": "Bearer " + tok(sub, 0), "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "whoami"})
		if r.StatusCode != 200 || !strings.Contains(body, `"subject":"`+sub+`"`) {
			t.Fatalf("2026-07-28 whoami of %s: %d %.300s", sub, r.StatusCode, body)
		}
	}

	// The token expires: the server ends the front's session of alice's
	// (its log says the session was lost); alice refreshes her token and
	// her session goes on.
	awaitLog(t, stderr, "MCP-Flow session lost", "the front's session outlived alice's token")
	fresh := tok("alice", 0)
	tt.tok.Store(&fresh)
	if got := sdkWhoami(t, ctx, cs); got != "alice" {
		t.Fatalf("whoami after the refresh: %q", got)
	}
	awaitLog(t, stderr, "reconnected to the MCP-Flow server", "the front did not dial again")
	if logs := stderr.String(); strings.Contains(logs, first) || strings.Contains(logs, fresh) {
		t.Fatalf("a token is in the log:\n%s", logs)
	}
}

// awaitLog waits up to 30 s for the server's stderr to hold want (the
// server's log is the only event a subprocess gives), else fails with why.
func awaitLog(t *testing.T, stderr *flowtest.SyncBuffer, want, why string) {
	t.Helper()
	if text, ok := stderr.Wait(30*time.Second, func(s string) bool { return strings.Contains(s, want) }); !ok {
		t.Fatalf("%s (no %q in 30 s); stderr:\n%s", why, want, text)
	}
}
