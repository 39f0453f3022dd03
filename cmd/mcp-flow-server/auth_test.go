package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/oidctest"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// testAudience is the resource identifier the tests' servers are: a token
// must name it in aud.
const testAudience = "https://mcp-flow.test/mcp-flow"

const testMetadataURL = "https://mcp-flow.test/.well-known/oauth-protected-resource/mcp-flow"

// eventLog collects a server's Events.
type eventLog struct {
	mu  sync.Mutex
	all []flow.Event
}

func (l *eventLog) observe(e flow.Event) { l.mu.Lock(); l.all = append(l.all, e); l.mu.Unlock() }

func (l *eventLog) count(f func(flow.Event) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.all {
		if f(e) {
			n++
		}
	}
	return n
}

// authServerInProcess runs the test tools behind the token check that
// -auth-issuer p -auth-audience testAudience -auth-scopes scopes set up
// (authFlags.setup, the flags' own code), in process, so that the test can
// count its sessions and goroutines.
func authServerInProcess(t *testing.T, p *oidctest.Provider, scopes string, ev *eventLog) *flow.Server {
	t.Helper()
	a := authFlags{issuer: p.Issuer, audience: testAudience, scopes: scopes, query: true, jwksRefresh: 200 * time.Millisecond}
	sa, err := a.setup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mux, caps := flowtest.ToolsMux(t, demotools.Config{})
	return flowtest.Serve(t, flow.ServerConfig{Handler: mux, Capabilities: caps, Auth: sa.Bearer,
		HTTPHandler: sa.wrap(nil), Hooks: flow.Hooks{Observe: ev.observe}})
}

func pinnedOrTest(t *testing.T, hash string) *tls.Config {
	if hash == "" {
		return flowtest.ClientTLS(t)
	}
	return flowtest.PinnedTLS(t, hash)
}

// TestJWTRefusals: every kind of bad token gets its status and challenge on
// the wire, from a real provider's tokens checked by -auth-issuer's
// verifier; a good one works, and so does a token signed after a key
// rotation; nothing refused becomes a session.
func TestJWTRefusals(t *testing.T) {
	p := oidctest.Start(t)
	ev := &eventLog{}
	srv := authServerInProcess(t, p, "mcp:tools", ev)
	good := oidctest.TokenOptions{Audience: testAudience, Scope: "mcp:tools extra", Subject: "alice"}
	with := func(f func(*oidctest.TokenOptions)) string {
		o := good
		f(&o)
		return p.Token(t, o)
	}
	meta := `resource_metadata="` + testMetadataURL + `"`
	invalid := `Bearer error="invalid_token", error_description="the access token is not valid", ` + meta
	cases := []struct {
		name      string
		h         http.Header
		status    int
		challenge string
	}{
		{"no token", nil, 401, "Bearer " + meta},
		{"garbage", flowtest.BearerHeader("not.a.jwt"), 401, invalid},
		{"wrong signature", flowtest.BearerHeader(with(func(o *oidctest.TokenOptions) { o.Foreign = true })), 401, invalid},
		{"wrong issuer", flowtest.BearerHeader(with(func(o *oidctest.TokenOptions) { o.Issuer = "http://127.0.0.1:1/elsewhere" })), 401, invalid},
		{"wrong audience", flowtest.BearerHeader(with(func(o *oidctest.TokenOptions) { o.Audience = "https://other.test/mcp" })), 401, invalid},
		{"expired", flowtest.BearerHeader(with(func(o *oidctest.TokenOptions) { o.ExpiresIn = -time.Minute })), 401, invalid},
		{"missing scope", flowtest.BearerHeader(with(func(o *oidctest.TokenOptions) { o.Scope = "extra" })), 403,
			`Bearer error="insufficient_scope", error_description="the access token lacks a required scope", scope="mcp:tools", ` + meta},
	}
	for _, c := range cases {
		resp, err := flowtest.ConnectOnce(t, srv.URL(), c.h, pinnedOrTest(t, ""))
		if err == nil || resp == nil {
			t.Fatalf("%s: CONNECT accepted", c.name)
		}
		got := resp.Header.Get("WWW-Authenticate")
		t.Logf("%s: HTTP %d, WWW-Authenticate: %s", c.name, resp.StatusCode, got)
		if resp.StatusCode != c.status || got != c.challenge {
			t.Errorf("%s: HTTP %d %q; want %d %q", c.name, resp.StatusCode, got, c.status, c.challenge)
		}
	}
	refused := ev.count(func(e flow.Event) bool { return e.Kind == flow.EventRefused && e.Outcome == "auth" })
	opened := ev.count(func(e flow.Event) bool { return e.Kind == flow.EventSessionOpen })
	if refused != len(cases) || opened != 0 || srv.Sessions() != 0 {
		t.Errorf("%d refusals (want %d), %d sessions opened, %d held (want none)", refused, len(cases), opened, srv.Sessions())
	}
	for _, e := range ev.all {
		for _, c := range cases {
			if tok := strings.TrimPrefix(c.h.Get("Authorization"), "Bearer "); tok != "" && strings.Contains(e.Reason, tok) {
				t.Errorf("an event names a token: %q", e.Reason)
			}
		}
	}

	s := dialWithToken(t, srv.URL(), "", func(context.Context) (string, error) { return p.Token(t, good), nil })
	if w := flowtest.Whoami(t, s); w.Subject != "alice" || strings.Join(w.Scopes, " ") != "mcp:tools extra" || w.ExpiresAt == "" {
		t.Errorf("whoami: %+v, want alice with mcp:tools extra", w)
	}
	old := p.Token(t, good)
	p.Rotate(t)
	rotated := p.Token(t, good)
	// The new key is fetched at its first use once -auth-jwks-refresh
	// (200 ms here) has passed since the last fetch: until then its tokens
	// are refused as unknown.
	deadline := time.Now().Add(10 * time.Second)
	for tries := 1; ; tries++ {
		resp, err := flowtest.ConnectOnce(t, srv.URL(), flowtest.BearerHeader(rotated), pinnedOrTest(t, ""))
		if err == nil {
			t.Logf("the token under the rotated key: accepted at try %d", tries)
			break
		}
		if resp == nil || resp.StatusCode != 401 || time.Now().After(deadline) {
			t.Fatalf("the token under the rotated key: %v (HTTP %v)", err, resp)
		}
		time.Sleep(100 * time.Millisecond) // the refresh interval is a time: nothing to wait on
	}
	if resp, err := flowtest.ConnectOnce(t, srv.URL(), flowtest.BearerHeader(old), pinnedOrTest(t, "")); err != nil {
		t.Errorf("a token signed before the rotation: %v (HTTP %v)", err, resp)
	}
}

// TestJWTRefusedConnectsLeaveNothing: many refused CONNECTs on one open
// QUIC connection make no session and keep no goroutine; once it closes
// the process is back at its goroutine count.
func TestJWTRefusedConnectsLeaveNothing(t *testing.T) {
	p := oidctest.Start(t)
	ev := &eventLog{}
	srv := authServerInProcess(t, p, "", ev)
	foreign := p.Token(t, oidctest.TokenOptions{Audience: testAudience, Foreign: true})
	before := flowtest.SettledGoroutines(0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tlsConf := flowtest.ClientTLS(t).Clone()
	tlsConf.NextProtos = []string{http3.NextProtoH3}
	qc, err := quic.DialAddr(ctx, srv.Addr().String(), tlsConf, &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true})
	if err != nil {
		t.Fatal(err)
	}
	tr := &webtransport.Transport{}
	cc, err := tr.NewClientConn(qc)
	if err != nil {
		t.Fatal(err)
	}
	connect := func(h http.Header) {
		t.Helper()
		resp, sess, _ := cc.Dial(ctx, srv.URL(), h)
		if sess != nil {
			sess.CloseWithError(0, "")
			t.Fatal("a CONNECT with a bad token was accepted")
		}
		if resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("CONNECT: %v; want 401", resp)
		}
	}
	connect(nil)
	base := flowtest.SettledGoroutines(0)
	const n = 150
	for i := range n {
		switch i % 3 {
		case 0:
			connect(nil)
		case 1:
			connect(flowtest.BearerHeader("garbage"))
		default:
			connect(flowtest.BearerHeader(foreign))
		}
	}
	during := flowtest.SettledGoroutines(base)
	t.Logf("goroutines: %d before, %d after one refused CONNECT, %d after %d more on the same open connection", before, base, during, n)
	if during > base+n/20 {
		t.Errorf("%d goroutines after %d refused CONNECTs, %d before them", during, n, base)
	}
	if got := ev.count(func(e flow.Event) bool { return e.Outcome == "auth" }); got != n+1 || srv.Sessions() != 0 ||
		ev.count(func(e flow.Event) bool { return e.Kind == flow.EventSessionOpen }) != 0 {
		t.Errorf("%d auth refusals (want %d), %d sessions held", got, n+1, srv.Sessions())
	}
	qc.CloseWithError(0, "")
	tr.Close()
	if after := flowtest.SettledGoroutines(before); after > before {
		t.Errorf("%d goroutines after the connection closed, %d before it", after, before)
	}
}

// TestServerAuthFlags: mcp-flow-server with -auth-*: the metadata document
// on HTTP/3 (and TCP), 401 without a token, whoami with one, a 2026-07-28
// session with a token, and a session ended when its token expires.
func TestServerAuthFlags(t *testing.T) {
	p := oidctest.Start(t)
	bin := buildServer(t)
	url, hash := flowtest.ServerProcess(t, bin, "-auth-issuer", p.Issuer, "-auth-audience", testAudience, "-auth-scopes", "mcp:tools")
	token := func(o oidctest.TokenOptions) func(context.Context) (string, error) {
		if o.Audience == "" {
			o.Audience, o.Scope, o.Subject = testAudience, "mcp:tools", "alice"
		}
		tok := p.Token(t, o)
		return func(context.Context) (string, error) { return tok, nil }
	}

	t.Run("metadata", func(t *testing.T) {
		// A -no-tcp server serves it on HTTP/3 too (its own handler, no
		// front behind it).
		udpURL, udpHash := flowtest.ServerProcess(t, bin, "-no-tcp", "-auth-issuer", p.Issuer, "-auth-audience", testAudience, "-auth-scopes", "mcp:tools")
		h3 := &http3.Transport{TLSClientConfig: flowtest.PinnedTLS(t, hash)}
		defer h3.Close()
		h3only := &http3.Transport{TLSClientConfig: flowtest.PinnedTLS(t, udpHash)}
		defer h3only.Close()
		tcp := &http.Transport{TLSClientConfig: flowtest.PinnedTLS(t, hash)}
		tcp.TLSClientConfig.NextProtos = nil
		defer tcp.CloseIdleConnections()
		for name, at := range map[string]struct {
			rt  http.RoundTripper
			url string
		}{"HTTP/3": {h3, url}, "TCP": {tcp, url}, "HTTP/3 with -no-tcp": {h3only, udpURL}} {
			rt, hostPort := at.rt, strings.TrimSuffix(strings.TrimPrefix(at.url, "https://"), "/mcp-flow")
			for _, path := range []string{"/.well-known/oauth-protected-resource/mcp-flow", "/.well-known/oauth-protected-resource"} {
				resp, err := (&http.Client{Transport: rt, Timeout: 20 * time.Second}).Get("https://" + hostPort + path)
				if err != nil {
					t.Errorf("%s %s: %v", name, path, err)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var doc struct {
					Resource             string   `json:"resource"`
					AuthorizationServers []string `json:"authorization_servers"`
					ScopesSupported      []string `json:"scopes_supported"`
				}
				t.Logf("%s %s: HTTP %d %s", name, path, resp.StatusCode, body)
				if resp.StatusCode != 200 || json.Unmarshal(body, &doc) != nil || doc.Resource != testAudience ||
					len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != p.Issuer {
					t.Errorf("%s %s: HTTP %d %s; want the metadata of %s naming %s", name, path, resp.StatusCode, body, testAudience, p.Issuer)
				}
			}
		}
	})

	t.Run("refused and accepted", func(t *testing.T) {
		resp, err := flowtest.ConnectOnce(t, url, nil, pinnedOrTest(t, hash))
		if err == nil || resp == nil || resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Bearer resource_metadata="`+testMetadataURL+`"` {
			t.Fatalf("no token: %v %v", resp, err)
		}
		s := dialWithToken(t, url, hash, token(oidctest.TokenOptions{}))
		if w := flowtest.Whoami(t, s); w.Subject != "alice" || strings.Join(w.Scopes, " ") != "mcp:tools" {
			t.Errorf("whoami: %+v", w)
		}
	})

	t.Run("2026-07-28", func(t *testing.T) {
		s := dialWithToken(t, url, hash, token(oidctest.TokenOptions{}), func(c *flow.ClientConfig) { c.ProtocolVersion = protocol.MCP20260728 })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := s.Call(ctx, protocol.MethodDiscover, map[string]any{}); err != nil {
			t.Fatalf("server/discover: %v", err)
		}
		if w := flowtest.Whoami(t, s); w.Subject != "alice" {
			t.Errorf("whoami: %+v", w)
		}
		_, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: flowtest.PinnedTLS(t, hash), Logger: flowtest.Quiet, ProtocolVersion: protocol.MCP20260728})
		var re *flow.RefusedError
		if !errors.As(err, &re) || re.Status != 401 {
			t.Errorf("2026-07-28 without a token: %v, want 401", err)
		}
	})

	t.Run("expiry", func(t *testing.T) {
		s := dialWithToken(t, url, hash, token(oidctest.TokenOptions{Audience: testAudience, Scope: "mcp:tools", ExpiresIn: 3 * time.Second}))
		if w := flowtest.Whoami(t, s); w.ExpiresAt == "" {
			t.Errorf("whoami: no expiry in %+v", w)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		select {
		case <-s.Done():
		case <-ctx.Done():
			t.Fatal("the session outlived its token by 30 s")
		}
		var se *flow.SessionError
		if r := s.PeerShutdownReason(); r != flow.ReasonTokenExpired || !errors.As(s.Err(), &se) || se.Code != flow.CloseOK {
			t.Errorf("session ended with $/shutdown %q and %v; want %q and a clean close", r, s.Err(), flow.ReasonTokenExpired)
		}
	})
}

// TestAuthFlagErrors: bad -auth-* flags stop the server at start, naming
// the flag: exit 2 for a mistake in the flags, 1 for an issuer that does
// not answer.
func TestAuthFlagErrors(t *testing.T) {
	bin := buildServer(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-auth-issuer", "http://127.0.0.1:1"}, 2, "-auth-audience: required"},
		{[]string{"-auth-issuer", "http://issuer.example", "-auth-audience", testAudience}, 2, "-auth-issuer: \\\"http://issuer.example\\\" is http:// on a host that is not loopback"},
		{[]string{"-auth-issuer", "https://issuer.example", "-auth-audience", "mcp-flow"}, 2, "-auth-audience: \\\"mcp-flow\\\" is not an absolute URI"},
		{[]string{"-auth-audience", testAudience}, 2, "-auth-audience: needs -auth-issuer"},
		{[]string{"-auth-issuer", "http://127.0.0.1:1", "-auth-audience", testAudience}, 1, "-auth-issuer: bearer: discovery of issuer http://127.0.0.1:1"},
		{[]string{"-auth-issuer", "http://127.0.0.1:1", "-auth-audience", testAudience, "-auth-jwks", "http://127.0.0.1:1/jwks"}, 1, "-auth-jwks: "},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, bin, append([]string{"-addr", "127.0.0.1:0", "-cert-dir", t.TempDir()}, c.args...)...)
		out, err := cmd.CombinedOutput()
		cancel()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		t.Logf("%v: exit %d: %s", c.args, code, strings.TrimSpace(string(out)))
		if code != c.code || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d naming %q", c.args, code, out, c.code, c.want)
		}
	}
}

func dialWithToken(t *testing.T, url, hash string, tok func(context.Context) (string, error), mods ...func(*flow.ClientConfig)) *flow.Session {
	t.Helper()
	cfg := flow.ClientConfig{TLSConfig: pinnedOrTest(t, hash), Logger: flowtest.Quiet, Token: tok}
	for _, m := range mods {
		m(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, url, cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
