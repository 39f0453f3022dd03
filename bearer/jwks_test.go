package bearer_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/internal/oidctest"
)

// forger signs access tokens that look like the provider's (iss, aud,
// sub, exp, typ at+jwt) with a key of its own (RS256, or ES256 which is
// quicker to make by the thousand), under any kid.
type forger struct {
	t      *testing.T
	key    any
	alg    jose.SignatureAlgorithm
	issuer string
}

func newForger(t *testing.T, issuer string, alg jose.SignatureAlgorithm) *forger {
	var key any
	var err error
	if alg == jose.ES256 {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	} else {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &forger{t, key, alg, issuer}
}

// tamper returns tok with byte i of its signature changed.
func tamper(t *testing.T, tok string, i int) string {
	dot := strings.LastIndexByte(tok, '.')
	sig, err := base64.RawURLEncoding.DecodeString(tok[dot+1:])
	if err != nil {
		t.Fatal(err)
	}
	sig[i%len(sig)] ^= 0x5a
	return tok[:dot+1] + base64.RawURLEncoding.EncodeToString(sig)
}

func (f *forger) token(kid string) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: f.alg, Key: jose.JSONWebKey{Key: f.key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		f.t.Fatal(err)
	}
	now := time.Now().Unix()
	claims, _ := json.Marshal(map[string]any{"iss": f.issuer, "aud": []string{resource}, "sub": "mallory",
		"scope": "tools", "client_id": "mcp-flow-client", "iat": now, "exp": now + 3600})
	jws, err := s.Sign(claims)
	if err != nil {
		f.t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		f.t.Fatal(err)
	}
	return tok
}

func randomKid(t *testing.T) string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// TestJWKSForgedTokensBounded: 500 forged tokens under random kids the
// issuer never published and 500 under its real kid with a bad signature
// (the provider's own foreign-signed one, 249 signed by another RSA key,
// 250 real ones with a changed signature byte), sent through the
// middleware by 8 clients at once, are each a 401 invalid_token and cost
// the issuer at most one JWKS fetch beyond the first (none, unless
// MinRefresh passes during the flood); a real token still verifies.
func TestJWKSForgedTokensBounded(t *testing.T) {
	p := oidctest.Start(t)
	var fetches atomic.Int32
	client := jwksCounter(p, &fetches)
	t.Cleanup(client.CloseIdleConnections)
	v := newVerifier(t, bearer.JWTConfig{Issuer: p.Issuer, Audience: resource, HTTPClient: client})
	srv := serve(t, bearer.Config{Verifier: v, ResourceMetadataURL: metaURL})
	good := p.Token(t, oidctest.TokenOptions{Audience: resource, Scope: "tools"})
	if a := get(t, srv, "/", good); a.status != 200 {
		t.Fatalf("a real token: %d %s", a.status, a.challenge)
	}
	foreign := p.Token(t, oidctest.TokenOptions{Audience: resource, Scope: "tools", Foreign: true})
	if kid(t, foreign) != kid(t, good) {
		t.Fatalf("the provider's foreign token has kid %q, not the real one %q", kid(t, foreign), kid(t, good))
	}
	forged := []string{foreign}
	ec, rs := newForger(t, p.Issuer, jose.ES256), newForger(t, p.Issuer, jose.RS256)
	for range 500 {
		forged = append(forged, ec.token(randomKid(t)))
	}
	for i := range 249 {
		forged = append(forged, rs.token(kid(t, good)), tamper(t, good, i))
	}
	forged = append(forged, tamper(t, good, 249))

	work := make(chan string)
	var wg sync.WaitGroup
	var wrong atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tok := range work {
				status, challenge, err := send(srv, tok)
				if err != nil || status != 401 || challenge != challengeInvalid {
					if wrong.Add(1) == 1 {
						t.Errorf("a forged token: %d %s %v", status, challenge, err)
					}
				}
			}
		}()
	}
	for _, tok := range forged {
		work <- tok
	}
	close(work)
	wg.Wait()
	if n := wrong.Load(); n != 0 {
		t.Errorf("%d of %d forged tokens not refused with invalid_token", n, len(forged))
	}
	n := fetches.Load()
	t.Logf("%d JWKS fetches for one real and %d forged tokens", n, len(forged))
	if n > 2 {
		t.Errorf("%d JWKS fetches for one real and %d forged tokens, want at most 2", n, len(forged))
	}
	for _, tok := range forged[:2] { // the verifier's own errors: a bad token, saying why
		if _, err := v(context.Background(), tok, nil); !errors.Is(err, bearer.ErrInvalidToken) || !strings.Contains(err.Error(), "bad signature") {
			t.Errorf("a forged token: %v, want ErrInvalidToken saying bad signature", err)
		}
	}
	if a := get(t, srv, "/", good); a.status != 200 {
		t.Errorf("the real token after the flood: %d %s", a.status, a.challenge)
	}
}

// send is get for other goroutines than the test's: GET / with token, its
// status and challenge.
func send(srv *httptest.Server, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := srv.Client().Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), nil
}

// TestJWKSSharedFetch: 50 real tokens checked at once by a new verifier
// cost one JWKS fetch, which they share.
func TestJWKSSharedFetch(t *testing.T) {
	p := oidctest.Start(t)
	var fetches atomic.Int32
	client := jwksCounter(p, &fetches)
	t.Cleanup(client.CloseIdleConnections)
	v := newVerifier(t, bearer.JWTConfig{Issuer: p.Issuer, Audience: resource, HTTPClient: client})
	tok := p.Token(t, oidctest.TokenOptions{Audience: resource})
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := v(context.Background(), tok, nil)
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a real token: %v", err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d JWKS fetches for 50 tokens at once, want 1", n)
	}
}

// jwksProxy serves the provider's JWKS, counting its requests: as is, or
// failing with 503 while fail is set, or padded with spaces (still a valid
// JWK Set) to pad bytes in all when pad is set.
type jwksProxy struct {
	URL     string
	fetches atomic.Int32
	fail    atomic.Bool
	pad     atomic.Int64
}

func startProxy(t *testing.T, p *oidctest.Provider) *jwksProxy {
	x := &jwksProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x.fetches.Add(1)
		if x.fail.Load() {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		resp, err := http.Get(p.JWKSURL())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if n := int(x.pad.Load()); n > len(b) {
			b = append(b, bytes.Repeat([]byte(" "), n-len(b))...)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	x.URL = srv.URL + "/jwks"
	return x
}

// TestJWKSFailedFetch: a failed JWKS fetch (503) is the verifier's error,
// not the token's; the keys held before it still verify their tokens, and
// it is rate-limited like a good one: more unknown kids before MinRefresh
// has passed cost no fetch. Once the JWKS is back and MinRefresh has
// passed, a rotated key verifies.
func TestJWKSFailedFetch(t *testing.T) {
	p := oidctest.Start(t)
	x := startProxy(t, p)
	const minRefresh = time.Second
	v := newVerifier(t, bearer.JWTConfig{Issuer: p.Issuer, Audience: resource, JWKS: x.URL, MinRefresh: minRefresh})
	good := p.Token(t, oidctest.TokenOptions{Audience: resource})
	if _, err := v(context.Background(), good, nil); err != nil {
		t.Fatal(err)
	}
	fetched := time.Now()
	x.fail.Store(true)
	f := newForger(t, p.Issuer, jose.ES256)
	var unknown []string
	for range 101 {
		unknown = append(unknown, f.token(randomKid(t)))
	}
	time.Sleep(time.Until(fetched.Add(minRefresh))) // the event awaited is MinRefresh's passing
	before := time.Now()
	_, err := v(context.Background(), unknown[0], nil)
	if err == nil || errors.Is(err, bearer.ErrInvalidToken) || !strings.Contains(err.Error(), "503") {
		t.Errorf("an unknown kid while the JWKS fails: %v, want the verifier's error naming the 503", err)
	}
	t.Logf("an unknown kid while the JWKS fails: %v", err)
	if n := x.fetches.Load(); n != 2 {
		t.Errorf("%d JWKS fetches, want 2", n)
	}
	for _, tok := range unknown[1:] {
		if _, err := v(context.Background(), tok, nil); err == nil {
			t.Fatal("a token under an unknown kid verified")
		}
	}
	if _, err := v(context.Background(), good, nil); err != nil {
		t.Errorf("the real token after a failed fetch: %v", err)
	}
	if time.Since(before) < minRefresh { // else the machine was too slow to tell
		if n := x.fetches.Load(); n != 2 {
			t.Errorf("%d JWKS fetches after 100 unknown kids within MinRefresh of a failed fetch, want 2", n)
		}
	} else {
		t.Logf("%v passed during 100 tokens: the rate limit after a failure not checked", time.Since(before))
	}

	x.fail.Store(false)
	due := time.Now().Add(minRefresh) // any fetch so far started before now
	p.Rotate(t)
	tok := p.Token(t, oidctest.TokenOptions{Audience: resource})
	time.Sleep(time.Until(due))
	if _, err := v(context.Background(), tok, nil); err != nil {
		t.Errorf("a rotated key after MinRefresh, the JWKS back: %v", err)
	}
}

// TestJWKSSizeLimit: a JWKS of exactly 1 MiB is read; one byte more is
// refused, the verifier's error naming the limit.
func TestJWKSSizeLimit(t *testing.T) {
	p := oidctest.Start(t)
	x := startProxy(t, p)
	tok := p.Token(t, oidctest.TokenOptions{Audience: resource})
	x.pad.Store(1 << 20)
	v := newVerifier(t, bearer.JWTConfig{Issuer: p.Issuer, Audience: resource, JWKS: x.URL})
	if _, err := v(context.Background(), tok, nil); err != nil {
		t.Errorf("a JWKS of 1 MiB: %v", err)
	}
	x.pad.Store(1<<20 + 1)
	v = newVerifier(t, bearer.JWTConfig{Issuer: p.Issuer, Audience: resource, JWKS: x.URL})
	_, err := v(context.Background(), tok, nil)
	if err == nil || errors.Is(err, bearer.ErrInvalidToken) || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("a JWKS of 1 MiB + 1 byte: %v, want the verifier's error naming the 1 MiB limit", err)
	}
	t.Logf("a JWKS of 1 MiB + 1 byte: %v", err)
}
