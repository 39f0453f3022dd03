package bearer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/internal/oidctest"
)

// jwksCounter is an http.Client that counts the JWKS fetches it makes.
func jwksCounter(p *oidctest.Provider, n *atomic.Int32) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.String() == p.JWKSURL() {
			n.Add(1)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func newVerifier(t *testing.T, c bearer.JWTConfig) bearer.Verifier {
	t.Helper()
	v, err := bearer.NewJWTVerifier(context.Background(), c)
	if err != nil {
		t.Fatalf("NewJWTVerifier: %v", err)
	}
	return v
}

// kid is the key id in a token's header.
func kid(t *testing.T, tok string) string {
	t.Helper()
	jws, err := jose.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	return jws.Signatures[0].Header.KeyID
}

// TestJWTValid: a real access token of the provider, found by discovery,
// gives its subject, scopes, expiry, client_id and iss, and reaches the
// handler through Middleware; scopes come from scope or from scp.
func TestJWTValid(t *testing.T) {
	p := oidctest.Start(t)
	v := newVerifier(t, bearer.JWTConfig{Issuer: p.Issuer, Audience: resource})
	for _, scp := range []bool{false, true} {
		tok := p.Token(t, oidctest.TokenOptions{Audience: resource, Scope: "tools read", Subject: "alice", SCP: scp})
		info, err := v(context.Background(), tok, nil)
		if err != nil {
			t.Fatalf("scp %v: %v", scp, err)
		}
		if info.UserID != "alice" || !slices.Equal(info.Scopes, []string{"tools", "read"}) ||
			info.Extra["client_id"] != "mcp-flow-client" || info.Extra["iss"] != p.Issuer {
			t.Errorf("scp %v: TokenInfo %+v", scp, info)
		}
		if d := time.Until(info.Expiration); d < 58*time.Minute || d > time.Hour+time.Minute {
			t.Errorf("scp %v: Expiration %v from now, want about an hour", scp, d)
		}
	}
	srv := serve(t, bearer.Config{Verifier: v, Scopes: []string{"tools"}, ResourceMetadataURL: metaURL})
	a := get(t, srv, "/", p.Token(t, oidctest.TokenOptions{Audience: resource, Scope: "tools", Subject: "bob"}))
	if a.status != 200 || a.body != `{"UserID":"bob","Scopes":["tools"]}`+"\n" {
		t.Errorf("valid token through Middleware: %d %q", a.status, a.body)
	}
	// typ JWT is accepted too; the subject defaults to the client.
	info, err := v(context.Background(), p.Token(t, oidctest.TokenOptions{Audience: resource, Type: "JWT"}), nil)
	if err != nil || info.UserID != "mcp-flow-client" {
		t.Errorf("typ JWT, default subject: %+v %v", info, err)
	}
}

// TestJWTRefusals: every kind of bad token is a 401 invalid_token on the
// wire (403 insufficient_scope for a missing scope, 401 without error for
// none), and the verifier's error says why without quoting the token.
func TestJWTRefusals(t *testing.T) {
	p := oidctest.Start(t)
	v := newVerifier(t, bearer.JWTConfig{Issuer: p.Issuer, Audience: resource})
	srv := serve(t, bearer.Config{Verifier: v, Scopes: []string{"tools"}, ResourceMetadataURL: metaURL})

	get(t, srv, "/", "").want(t, "no token", 401, challengeNoToken)
	get(t, srv, "/", p.Token(t, oidctest.TokenOptions{Audience: resource, Scope: "read"})).want(t, "missing scope", 403, challengeScope)

	for _, c := range []struct {
		name, why string
		tok       string
	}{
		{"garbage", "malformed", "not-a-jwt"},
		{"three garbage parts", "malformed", "aaaa.bbbb.cccc"},
		{"wrong signature", "bad signature", p.Token(t, oidctest.TokenOptions{Audience: resource, Scope: "tools", Foreign: true})},
		{"wrong issuer", "wrong issuer", p.Token(t, oidctest.TokenOptions{Audience: resource, Scope: "tools", Issuer: "https://evil.example"})},
		{"wrong audience", "wrong audience", p.Token(t, oidctest.TokenOptions{Audience: "https://127.0.0.1:4433/other", Scope: "tools"})},
		{"no audience", "wrong audience", p.Token(t, oidctest.TokenOptions{Scope: "tools"})},
		{"expired", "expired", p.Token(t, oidctest.TokenOptions{Audience: resource, Scope: "tools", ExpiresIn: -time.Minute})},
		{"wrong type", "wrong token type", p.Token(t, oidctest.TokenOptions{Audience: resource, Scope: "tools", Type: "secevent+jwt"})},
		{"no subject", "no sub claim", p.Token(t, oidctest.TokenOptions{Audience: resource, Scope: "tools", NoSubject: true})},
	} {
		get(t, srv, "/", c.tok).want(t, c.name, 401, challengeInvalid)
		_, err := v(context.Background(), c.tok, nil)
		if !errors.Is(err, bearer.ErrInvalidToken) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: error %v, want ErrInvalidToken saying %q", c.name, err, c.why)
		}
		if err != nil && strings.Contains(err.Error(), c.tok) {
			t.Errorf("%s: the error quotes the token", c.name)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestJWTKeyRotation: after the issuer rotates its signing key, a token
// under the new kid is refused without a fetch until MinRefresh has passed
// since the last fetch, then verifies with the same verifier, which fetched
// the JWKS again for it (and not for a token under a key it holds); older
// tokens still verify.
func TestJWTKeyRotation(t *testing.T) {
	p := oidctest.Start(t)
	var fetches atomic.Int32
	const minRefresh = 500 * time.Millisecond
	v := newVerifier(t, bearer.JWTConfig{Issuer: p.Issuer, Audience: resource, HTTPClient: jwksCounter(p, &fetches), MinRefresh: minRefresh})
	srv := serve(t, bearer.Config{Verifier: v, ResourceMetadataURL: metaURL})
	old := p.Token(t, oidctest.TokenOptions{Audience: resource})
	before := time.Now() // the fetch starts after this
	for i := range 2 {
		if a := get(t, srv, "/", old); a.status != 200 {
			t.Fatalf("before rotation, try %d: %d %s", i, a.status, a.challenge)
		}
	}
	fetched := time.Now() // and has ended by this
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches for two tokens of one key, want 1", n)
	}
	p.Rotate(t)
	tok := p.Token(t, oidctest.TokenOptions{Audience: resource})
	if kid(t, tok) == kid(t, old) {
		t.Fatal("the token after Rotate has the old kid")
	}
	a := get(t, srv, "/", tok)
	if time.Since(before) < minRefresh { // else the machine was too slow to tell
		a.want(t, "new kid before MinRefresh", 401, challengeInvalid)
		if n := fetches.Load(); n != 1 {
			t.Errorf("%d JWKS fetches after a new kid before MinRefresh, want 1", n)
		}
		time.Sleep(time.Until(fetched.Add(minRefresh))) // the event awaited is MinRefresh's passing
		a = get(t, srv, "/", tok)
	} else {
		t.Logf("%v passed before the new kid's first check: its refusal not checked", time.Since(before))
	}
	if a.status != 200 {
		t.Fatalf("after rotation: %d %s", a.status, a.challenge)
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("%d JWKS fetches after a token with a new kid, want 2", n)
	}
	if a := get(t, srv, "/", old); a.status != 200 {
		t.Errorf("the token of the old key after rotation: %d %s", a.status, a.challenge)
	}
}

// TestJWTJWKSSources: the JWKS by URL and from a local file (read once);
// a token of a key the file lacks is refused.
func TestJWTJWKSSources(t *testing.T) {
	p := oidctest.Start(t)
	tok := p.Token(t, oidctest.TokenOptions{Audience: resource, Scope: "tools"})

	byURL := newVerifier(t, bearer.JWTConfig{Issuer: p.Issuer, Audience: resource, JWKS: p.JWKSURL()})
	if _, err := byURL(context.Background(), tok, nil); err != nil {
		t.Errorf("JWKS by URL: %v", err)
	}

	resp, err := http.Get(p.JWKSURL())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	byFile := newVerifier(t, bearer.JWTConfig{Issuer: p.Issuer, Audience: resource, JWKS: file})
	if err := os.Remove(file); err != nil { // read once: not needed any more
		t.Fatal(err)
	}
	srv := serve(t, bearer.Config{Verifier: byFile, ResourceMetadataURL: metaURL})
	if a := get(t, srv, "/", tok); a.status != 200 {
		t.Errorf("JWKS from a file: %d %s", a.status, a.challenge)
	}
	get(t, srv, "/", p.Token(t, oidctest.TokenOptions{Audience: resource, Foreign: true})).want(t, "JWKS file, foreign key", 401, challengeInvalid)
	p.Rotate(t)
	get(t, srv, "/", p.Token(t, oidctest.TokenOptions{Audience: resource})).want(t, "JWKS file, key rotated in after", 401, challengeInvalid)

	if _, err := bearer.NewJWTVerifier(context.Background(), bearer.JWTConfig{Issuer: p.Issuer, Audience: resource, JWKS: file}); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("a missing JWKS file: %v, want an error naming it", err)
	}
}

// TestJWTPlainHTTPOnlyOnLoopback: an http:// issuer or JWKS URL is refused
// unless its host is loopback, before any connection; https:// and
// loopback http:// are accepted.
func TestJWTPlainHTTPOnlyOnLoopback(t *testing.T) {
	var dials atomic.Int32
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return nil, fmt.Errorf("this test dials nothing (%s)", addr)
	}}}
	for _, c := range []struct {
		cfg   bearer.JWTConfig
		field string
	}{
		{bearer.JWTConfig{Issuer: "http://idp.example", Audience: resource}, "Issuer"},
		{bearer.JWTConfig{Issuer: "http://192.0.2.1:9400", Audience: resource, JWKS: "https://idp.example/jwks"}, "Issuer"},
		{bearer.JWTConfig{Issuer: "https://idp.example", Audience: resource, JWKS: "http://idp.example/jwks"}, "JWKS"},
		{bearer.JWTConfig{Issuer: "ftp://idp.example", Audience: resource, JWKS: "https://idp.example/jwks"}, "Issuer"},
	} {
		c.cfg.HTTPClient = client
		_, err := bearer.NewJWTVerifier(context.Background(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.field)
		}
		t.Logf("%s: %v", c.field, err)
	}
	for _, c := range []bearer.JWTConfig{
		{Issuer: "https://idp.example", Audience: resource, JWKS: "https://idp.example/jwks"},
		{Issuer: "http://127.0.0.1:9400", Audience: resource, JWKS: "http://[::1]:9400/jwks"},
		{Issuer: "http://localhost:9400", Audience: resource, JWKS: "http://localhost:9400/jwks"},
	} {
		c.HTTPClient = client
		if _, err := bearer.NewJWTVerifier(context.Background(), c); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("%d dials", n)
	}
}

// TestJWTDiscoveredJWKSURI: a discovery document whose jwks_uri is plain
// http on a host that is not loopback is refused, before any fetch of it.
func TestJWTDiscoveredJWKSURI(t *testing.T) {
	p := oidctest.StartWith(t, oidctest.Options{JWKSURI: "http://idp.example/jwks"})
	_, err := bearer.NewJWTVerifier(context.Background(), bearer.JWTConfig{Issuer: p.Issuer, Audience: resource})
	if err == nil || !strings.Contains(err.Error(), "jwks_uri") {
		t.Errorf("discovery naming http://idp.example/jwks: %v, want an error naming jwks_uri", err)
	}
	t.Logf("%v", err)
}

// TestFileSource: the token file is read on each call, trimmed; missing or
// empty is an error naming the file.
func TestFileSource(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	src := bearer.FileSource(path)
	if _, err := src(context.Background()); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("missing file: %v, want an error naming it", err)
	}
	os.WriteFile(path, []byte(" \n"), 0o600)
	if _, err := src(context.Background()); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("empty file: %v, want an error naming it", err)
	}
	os.WriteFile(path, []byte("one\n"), 0o600)
	if tok, err := src(context.Background()); tok != "one" || err != nil {
		t.Errorf("got %q %v, want one", tok, err)
	}
	os.WriteFile(path, []byte("two"), 0o600)
	if tok, err := src(context.Background()); tok != "two" || err != nil {
		t.Errorf("after renewal: %q %v, want two", tok, err)
	}
}
