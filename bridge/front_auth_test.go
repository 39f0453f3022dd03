package bridge_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/oidctest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Authentication on the fronts (docs/spec.md §9.1, §10 "Authentication on
// the fronts"), with real tokens from a real OpenID provider
// (internal/oidctest) and real servers on loopback.

// serverAudience is the MCP-Flow server's resource identifier in these
// tests: the audience of its tokens.
const serverAudience = "https://mcp-flow.test/mcp-flow"

// verifier checks the provider's tokens for audience, with scopes
// required; the challenge names audience's metadata.
func verifier(t *testing.T, p *oidctest.Provider, audience string, scopes ...string) bearer.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := bearer.NewJWTVerifier(ctx, bearer.JWTConfig{Issuer: p.Issuer, Audience: audience, JWKS: p.JWKSURL()})
	if err != nil {
		t.Fatal(err)
	}
	return bearer.Config{Verifier: v, Scopes: scopes, ResourceMetadataURL: bearer.MetadataURL(audience)}
}

// sessionLog notes the subject of each MCP-Flow session the server opens.
type sessionLog struct {
	mu       sync.Mutex
	subjects []string
}

func (l *sessionLog) note(s *flow.Session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sub := "(anonymous)"
	if ti := s.TokenInfo(); ti != nil {
		sub = ti.UserID
	}
	l.subjects = append(l.subjects, sub)
}

func (l *sessionLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.subjects)
	slices.Sort(s)
	return s
}

// authServer is an MCP-Flow server (the test tools, whoami among them)
// that asks every CONNECT for a token of auth.
func authServer(t *testing.T, auth bearer.Config) (*flow.Server, *sessionLog) {
	t.Helper()
	log := &sessionLog{}
	return flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet, Auth: auth, OnSession: log.note}), log
}

// authFront serves an HTTP front for srv at /mcp of a loopback listener,
// with its resource metadata beside it (HTTPFront.Metadata); mk makes its
// config knowing the endpoint's URL, which it returns.
func authFront(t *testing.T, srv *flow.Server, mk func(endpoint string) bridge.HTTPConfig) string {
	t.Helper()
	mux := http.NewServeMux()
	ts := httptest.NewUnstartedServer(mux)
	endpoint := "http://" + ts.Listener.Addr().String() + "/mcp"
	cfg := mk(endpoint)
	cfg.Stdio.URL = srv.URL()
	cfg.Stdio.StreamDir = t.TempDir()
	cfg.Stdio.Client = flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet}
	cfg.Stdio.Logger = flowtest.Quiet
	h := bridge.NewHTTPFront(cfg)
	mux.Handle("/mcp", h)
	if path, mh := h.Metadata(); mh != nil {
		mux.Handle(path, mh)
	}
	ts.Start()
	t.Cleanup(func() { ts.CloseClientConnections(); h.Close(); ts.Close() })
	return endpoint
}

// withToken is an http.Client that sends tok as a bearer token.
func withToken(tok string) *http.Client {
	return &http.Client{Transport: bearerTransport{tok: tok}}
}

type bearerTransport struct{ tok string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// sdkSession connects a go-sdk Streamable HTTP client with tok to
// endpoint, in version ("" is the client's default: 2026-07-28 after its
// server/discover probe).
func sdkSession(t *testing.T, ctx context.Context, endpoint, tok, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "auth-host", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: withToken(tok)}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// whoami calls the whoami tool and returns the subject the server saw.
func whoami(t *testing.T, ctx context.Context, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("whoami: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var w demotools.Whoami
	if err := json.Unmarshal(b, &w); err != nil || !w.Authenticated {
		t.Fatalf("whoami answered %s (%v)", b, err)
	}
	return w.Subject
}

// rawPOST sends body to endpoint with the given headers and returns the
// response (closed at cleanup).
func rawRequest(t *testing.T, method, endpoint, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestHTTPFrontAuth2025: an HTTP front with the server's own audience,
// passing each client's token through (the server's own TCP side, §10.1).
// No token is 401 naming the front's resource metadata, which it serves; a
// token without the scope is 403 insufficient_scope; a 2025 session of
// alice's calls whoami as alice; bob's token on alice's session id gets 404
// on POST, GET and DELETE while alice's own works; the server saw alice's
// session only.
func TestHTTPFrontAuth2025(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	auth := verifier(t, p, serverAudience, "mcp")
	srv, sessions := authServer(t, auth)
	endpoint := authFront(t, srv, func(string) bridge.HTTPConfig {
		// A small inline limit: generate's stream becomes a download.
		return bridge.HTTPConfig{Auth: auth, PassToken: true, Resource: serverAudience, AuthorizationServers: []string{p.Issuer},
			Stdio: bridge.StdioConfig{InlineLimit: 1024}}
	})
	base := strings.TrimSuffix(endpoint, "/mcp")
	alice := p.Token(t, oidctest.TokenOptions{Audience: serverAudience, Scope: "mcp", Subject: "alice"})
	bob := p.Token(t, oidctest.TokenOptions{Audience: serverAudience, Scope: "mcp", Subject: "bob"})

	// No token: 401, the challenge names the metadata, which is served.
	resp := rawRequest(t, "POST", endpoint, initBody, nil)
	meta := bearer.MetadataURL(serverAudience)
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(ch, `resource_metadata="`+meta+`"`) {
		t.Fatalf("no token: %s, WWW-Authenticate %q", resp.Status, ch)
	}
	t.Logf("no token: %s, WWW-Authenticate: %s", resp.Status, resp.Header.Get("WWW-Authenticate"))
	mr := rawRequest(t, "GET", base+bearer.MetadataPath(serverAudience), "", nil)
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	if err := json.NewDecoder(mr.Body).Decode(&md); err != nil || mr.StatusCode != 200 || md.Resource != serverAudience ||
		!slices.Equal(md.AuthorizationServers, []string{p.Issuer}) || !slices.Equal(md.ScopesSupported, []string{"mcp"}) {
		t.Fatalf("metadata: %s %+v %v", mr.Status, md, err)
	}

	// A valid token without the scope: 403 insufficient_scope.
	noScope := p.Token(t, oidctest.TokenOptions{Audience: serverAudience, Scope: "other", Subject: "alice"})
	resp = rawRequest(t, "POST", endpoint, initBody, map[string]string{"Authorization": "Bearer " + noScope})
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusForbidden || !strings.Contains(ch, `error="insufficient_scope"`) || !strings.Contains(ch, `scope="mcp"`) {
		t.Fatalf("token without the scope: %s, WWW-Authenticate %q", resp.Status, ch)
	}
	t.Logf("missing scope: %s, WWW-Authenticate: %s", resp.Status, resp.Header.Get("WWW-Authenticate"))

	// alice's 2025 session.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := sdkSession(t, ctx, endpoint, alice, "2025-11-25")
	if got := whoami(t, ctx, cs); got != "alice" {
		t.Fatalf("whoami through the front: %q, want alice", got)
	}
	sid := cs.ID()
	if sid == "" {
		t.Fatal("no session id")
	}
	ping := `{"jsonrpc":"2.0","id":99,"method":"ping"}`
	as := func(tok string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tok, "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	}
	for _, m := range []string{"POST", "GET", "DELETE"} {
		body := ""
		if m == "POST" {
			body = ping
		}
		if resp := rawRequest(t, m, endpoint, body, as(bob)); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s with bob's token on alice's session: %s, want 404", m, resp.Status)
		}
	}
	if resp := rawRequest(t, "POST", endpoint, ping, as(alice)); resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's own ping on her session: %s", resp.Status)
	}
	// alice's download (a stream past the inline limit) is hers too.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "generate", Arguments: map[string]any{"bytes": 4096}})
	if err != nil || res.IsError {
		t.Fatalf("generate: %v %+v", err, res)
	}
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok && strings.Contains(l.URI, "?download=") {
			link = l
		}
	}
	if link == nil {
		t.Fatalf("generate 4096 bytes past a 1 KiB inline limit: %+v, want a download link", res.Content)
	}
	// In this order: a download complete in full is removed.
	for _, c := range []struct {
		who  string
		want int
	}{{"", http.StatusUnauthorized}, {bob, http.StatusNotFound}, {alice, http.StatusOK}} {
		who, want := c.who, c.want
		hdr := map[string]string{}
		if who != "" {
			hdr["Authorization"] = "Bearer " + who
		}
		if resp := rawRequest(t, "GET", link.URI, "", hdr); resp.StatusCode != want {
			t.Fatalf("GET alice's download with %d-byte token: %s, want %d", len(who), resp.Status, want)
		}
	}
	if got := whoami(t, ctx, cs); got != "alice" {
		t.Fatalf("whoami after bob's attempts: %q", got)
	}
	if got := sessions.get(); !slices.Equal(got, []string{"alice"}) {
		t.Fatalf("the server's sessions were of %v, want alice's alone", got)
	}
}

// TestHTTPFrontAuthStateless: two 2026-07-28 clients of different subjects
// from one address get a holder each (spec §11.6: per subject, not per
// address), so an MCP-Flow session each, dialled with their own token:
// whoami answers each its own subject.
func TestHTTPFrontAuthStateless(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	auth := verifier(t, p, serverAudience, "mcp")
	srv, sessions := authServer(t, auth)
	endpoint := authFront(t, srv, func(string) bridge.HTTPConfig {
		return bridge.HTTPConfig{Auth: auth, PassToken: true, Resource: serverAudience}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, sub := range []string{"alice", "bob"} {
		cs := sdkSession(t, ctx, endpoint, p.Token(t, oidctest.TokenOptions{Audience: serverAudience, Scope: "mcp", Subject: sub}), "")
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s, want 2026-07-28", v)
		}
		for range 2 {
			if got := whoami(t, ctx, cs); got != sub {
				t.Fatalf("whoami of %s: %q", sub, got)
			}
		}
	}
	if got := sessions.get(); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Fatalf("the server's sessions were of %v, want one of alice's and one of bob's", got)
	}
}

// TestHTTPFrontOwnCredential: a standalone front (its own audience) in
// front of a server of another audience presents its own credential
// (StdioConfig.Token from a token file): its client alice is checked by the
// front, and the server's tools see the front's subject. alice's token
// itself would be refused by the server (another audience).
func TestHTTPFrontOwnCredential(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	auth := verifier(t, p, serverAudience, "mcp")
	srv, sessions := authServer(t, auth)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(p.Token(t, oidctest.TokenOptions{Audience: serverAudience, Scope: "mcp", Subject: "the-front"})+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The front's audience is its own endpoint.
	frontAudience := authFront(t, srv, func(endpoint string) bridge.HTTPConfig {
		return bridge.HTTPConfig{Auth: verifier(t, p, endpoint, "front"), Resource: endpoint, Stdio: bridge.StdioConfig{Token: bearer.FileSource(file)}}
	})
	endpoint := frontAudience
	alice := p.Token(t, oidctest.TokenOptions{Audience: frontAudience, Scope: "front", Subject: "alice"})
	if resp := rawRequest(t, "POST", endpoint, initBody, map[string]string{"Authorization": "Bearer " + p.Token(t, oidctest.TokenOptions{Audience: serverAudience, Scope: "mcp front", Subject: "alice"})}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a token for the server's audience at the front: %s, want 401", resp.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := sdkSession(t, ctx, endpoint, alice, "2025-11-25")
	if got := whoami(t, ctx, cs); got != "the-front" {
		t.Fatalf("whoami through a standalone front: %q, want the front's own subject", got)
	}
	if got := sessions.get(); !slices.Equal(got, []string{"the-front"}) {
		t.Fatalf("the server's sessions were of %v", got)
	}
}

// TestHTTPFrontStaticToken: the static HTTPConfig.Token
// ($MCP_FLOW_BRIDGE_TOKEN) behaves as before Auth existed: 401
// "WWW-Authenticate: Bearer" without it or with another, the session works
// with it; with Auth as well NewHTTPFront panics (one or the other).
func TestHTTPFrontStaticToken(t *testing.T) {
	t.Parallel()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	endpoint := authFront(t, srv, func(string) bridge.HTTPConfig { return bridge.HTTPConfig{Token: "s3cret"} })
	for _, auth := range []string{"", "Bearer other", "Basic czNjcmV0"} {
		hdr := map[string]string{}
		if auth != "" {
			hdr["Authorization"] = auth
		}
		if r := rawRequest(t, "POST", endpoint, initBody, hdr); r.StatusCode != http.StatusUnauthorized || r.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("Authorization %q: %s, WWW-Authenticate %q", auth, r.Status, r.Header.Get("WWW-Authenticate"))
		}
	}
	if r := rawRequest(t, "POST", endpoint, initBody, map[string]string{"Authorization": "Bearer s3cret"}); r.StatusCode != http.StatusOK || r.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("with the token: %s", r.Status)
	}
	defer func() {
		if recover() == nil {
			t.Error("NewHTTPFront took both Token and Auth")
		}
	}()
	bridge.NewHTTPFront(bridge.HTTPConfig{Token: "s3cret", Auth: bearer.Config{Verifier: func(context.Context, string, *http.Request) (*bearer.TokenInfo, error) {
		return nil, bearer.ErrInvalidToken
	}}})
}
