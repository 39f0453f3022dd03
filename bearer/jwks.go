package bearer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// maxJWKSBytes bounds the body of a JWKS response: a JWK Set of a few keys
// is a few kB.
const maxJWKSBytes = 1 << 20

// DefaultMinRefresh is JWTConfig.MinRefresh when it is zero.
const DefaultMinRefresh = 10 * time.Second

// remoteKeys is the JWK Set (RFC 7517 §5) at a URL, cached: go-oidc's
// oidc.KeySet for NewJWTVerifier. Unlike go-oidc's RemoteKeySet, which
// fetches the set again for every token its cached keys do not verify, the
// work a hostile peer can cause is bounded (docs/spec.md §9): the set is
// fetched at first use, and again only for a token whose kid names no
// cached key (the issuer's key rotation, OpenID Connect Core §10.1.1), at
// most once per minRefresh, whether the last fetch succeeded or not.
// A token under a cached kid whose signature fails is refused without a
// fetch. Concurrent callers share one fetch; a failed fetch keeps the
// keys held. Signatures are checked by go-jose.
type remoteKeys struct {
	url        string
	client     *http.Client
	minRefresh time.Duration

	mu       sync.Mutex
	keys     jose.JSONWebKeySet // the signing keys of the last good fetch
	fetched  time.Time          // start of the last fetch; zero: none yet
	err      error              // the last fetch's failure, nil after a good one
	inflight chan struct{}      // closed when the running fetch ends; nil: none
}

func newRemoteKeys(url string, client *http.Client, minRefresh time.Duration) *remoteKeys {
	if minRefresh <= 0 {
		minRefresh = DefaultMinRefresh
	}
	return &remoteKeys{url: url, client: client, minRefresh: minRefresh}
}

// VerifySignature checks jwt's signature (JWS compact serialization, RFC
// 7515 §7.1) against the issuer's keys under its kid, and returns its
// payload. A token without kid is tried against every key held.
func (r *remoteKeys) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSigned(jwt, toJOSE(signingAlgs))
	if err != nil {
		return nil, fmt.Errorf("malformed jwt: %v", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("malformed jwt: %d signatures", len(jws.Signatures))
	}
	h := jws.Signatures[0].Header
	keys, err := r.keysFor(ctx, h.KeyID)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no key of the issuer's JWKS has the token's kid")
	}
	for _, k := range keys {
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			continue // RFC 7517 §4.4: the key is for another algorithm
		}
		if payload, err := jws.Verify(&k); err == nil {
			return payload, nil
		}
	}
	return nil, errors.New("no key of the issuer's JWKS verifies the token's signature")
}

// keysFor returns the keys held under kid (all of them for ""), fetching
// the set first when none is held under it and a fetch is due.
func (r *remoteKeys) keysFor(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	r.mu.Lock()
	if keys := r.lookup(kid); len(keys) > 0 {
		r.mu.Unlock()
		return keys, nil
	}
	wait := r.inflight
	if wait == nil {
		if !r.fetched.IsZero() && time.Since(r.fetched) < r.minRefresh {
			// Not due: refuse with what is held.
			err := r.err
			r.mu.Unlock()
			return nil, err
		}
		wait = make(chan struct{})
		r.inflight = wait
		r.fetched = time.Now()
		go r.fetch(context.WithoutCancel(ctx), wait)
	}
	r.mu.Unlock()
	select {
	case <-wait: // this fetch was the due one: no other for this token
	case <-ctx.Done():
		return nil, fmt.Errorf("fetching keys: %w", ctx.Err())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if keys := r.lookup(kid); len(keys) > 0 {
		return keys, nil
	}
	return nil, r.err
}

// lookup returns the keys held under kid; r.mu is held.
func (r *remoteKeys) lookup(kid string) []jose.JSONWebKey {
	if kid == "" {
		return r.keys.Keys
	}
	return r.keys.Key(kid)
}

// fetch fetches the set into r and closes done. It runs apart from the
// caller that started it (whose ctx values it keeps, not its
// cancellation), so that the callers sharing it do not fail with the
// first one; the HTTP client's timeout bounds it, or jwksTimeout
// when the client has none.
func (r *remoteKeys) fetch(ctx context.Context, done chan struct{}) {
	keys, err := r.get(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.err = fmt.Errorf("fetching keys: %w", err)
	} else {
		r.keys, r.err = keys, nil
	}
	r.inflight = nil
	close(done)
}

// jwksTimeout bounds a JWKS fetch when JWTConfig.HTTPClient has no
// timeout.
const jwksTimeout = 10 * time.Second

// get fetches and parses the set: its public signing keys. A key go-jose
// cannot read (a type it does not know) is left out, not the set.
func (r *remoteKeys) get(ctx context.Context) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if r.client.Timeout == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, jwksTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return set, fmt.Errorf("bearer: JWKS %s: %v", r.url, err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return set, fmt.Errorf("bearer: JWKS %s: %v", r.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return set, fmt.Errorf("bearer: JWKS %s: %s", r.url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return set, fmt.Errorf("bearer: JWKS %s: %v", r.url, err)
	}
	if len(b) > maxJWKSBytes {
		return set, fmt.Errorf("bearer: JWKS %s is larger than the limit of %d bytes (1 MiB)", r.url, maxJWKSBytes)
	}
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return set, fmt.Errorf("bearer: JWKS %s: %v", r.url, err)
	}
	for _, m := range raw.Keys {
		var k jose.JSONWebKey
		if json.Unmarshal(m, &k) != nil {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if pub := k.Public(); pub.Valid() {
			set.Keys = append(set.Keys, pub)
		}
	}
	if len(set.Keys) == 0 {
		return set, fmt.Errorf("bearer: JWKS %s holds no public signing key", r.url)
	}
	return set, nil
}
