package bearer

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

// JWTConfig says which JWT access tokens (RFC 9068) NewJWTVerifier accepts.
type JWTConfig struct {
	// Issuer is the authorization server's issuer identifier: a token's iss
	// must equal it exactly (RFC 9068 §4). https://, or http:// on a
	// loopback host only.
	Issuer string
	// Audience is this server's resource identifier (RFC 8707 §2, the
	// resource of its protected resource metadata): a token's aud must
	// contain it (RFC 9068 §4).
	Audience string
	// JWKS is where the issuer's signing keys are: "" to find them through
	// the issuer's OpenID discovery document (jwks_uri of
	// Issuer/.well-known/openid-configuration), an https:// (or loopback
	// http://) URL, or the path of a local JWK Set file, read once.
	JWKS string
	// HTTPClient fetches discovery and the JWKS; nil is a client with a 10 s
	// timeout.
	HTTPClient *http.Client
	// MinRefresh is the least time between two fetches of a remote JWKS
	// (0 is DefaultMinRefresh, 10 s). The JWKS is fetched at the first
	// token, then again only for a token whose kid names no key held, at
	// most once per MinRefresh, failed fetches included: the issuer's new
	// key is picked up at its first use once MinRefresh has passed since
	// the last fetch (a token under it before then is refused), and a flood
	// of forged tokens costs the issuer at most one fetch per MinRefresh
	// (docs/spec.md §9).
	MinRefresh time.Duration
}

// signingAlgs are the JWS algorithms a token may be signed with: the
// asymmetric ones go-oidc supports (never none, never an HMAC). go-jose
// binds each to its key type.
var signingAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512,
	oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.EdDSA,
}

// NewJWTVerifier returns a Verifier of JWT access tokens (RFC 9068) issued
// by c.Issuer for c.Audience: the signature is checked against the issuer's
// JWKS (by go-jose), iss, aud, exp and nbf by github.com/coreos/go-oidc. A
// remote JWKS is fetched at the first token and again when a token names a
// key it does not hold (key rotation), at most once per c.MinRefresh; its
// body is limited to 1 MiB.
// With c.JWKS "" the issuer's discovery document is fetched now, with ctx.
//
// A bad token's error wraps ErrInvalidToken and says why (malformed, bad
// signature, wrong issuer, wrong audience, expired, not yet valid, wrong
// type); it never holds the token.
func NewJWTVerifier(ctx context.Context, c JWTConfig) (Verifier, error) {
	if c.Issuer == "" {
		return nil, errors.New("bearer: JWTConfig.Issuer (the authorization server) is empty")
	}
	if c.Audience == "" {
		return nil, errors.New("bearer: JWTConfig.Audience (this server's resource URL) is empty")
	}
	if err := checkURL("Issuer", c.Issuer); err != nil {
		return nil, err
	}
	client := c.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	cctx := oidc.ClientContext(ctx, client)
	var keys oidc.KeySet
	switch {
	case c.JWKS == "":
		p, err := oidc.NewProvider(cctx, c.Issuer)
		if err != nil {
			return nil, fmt.Errorf("bearer: discovery of issuer %s: %w", c.Issuer, err)
		}
		var meta struct {
			JWKSURI string `json:"jwks_uri"`
		}
		if err := p.Claims(&meta); err != nil {
			return nil, fmt.Errorf("bearer: discovery of issuer %s: %w", c.Issuer, err)
		}
		if meta.JWKSURI == "" {
			return nil, fmt.Errorf("bearer: discovery of issuer %s names no jwks_uri", c.Issuer)
		}
		if err := checkURL("jwks_uri of the issuer's discovery", meta.JWKSURI); err != nil {
			return nil, err
		}
		keys = newRemoteKeys(meta.JWKSURI, client, c.MinRefresh)
	case strings.Contains(c.JWKS, "://"):
		if err := checkURL("JWKS", c.JWKS); err != nil {
			return nil, err
		}
		keys = newRemoteKeys(c.JWKS, client, c.MinRefresh)
	default:
		ks, err := jwksFile(c.JWKS)
		if err != nil {
			return nil, err
		}
		keys = ks
	}
	v := oidc.NewVerifier(c.Issuer, keys, &oidc.Config{ClientID: c.Audience, SupportedSigningAlgs: signingAlgs})
	return func(ctx context.Context, token string, _ *http.Request) (*TokenInfo, error) {
		return verifyJWT(ctx, v, token)
	}, nil
}

// checkURL refuses a URL that is not https://, or http:// on a loopback
// host ("localhost" or a loopback IP); field names the setting in errors.
func checkURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("bearer: %s %q is not a URL: %v", field, raw, err)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		h := u.Hostname()
		if ip := net.ParseIP(h); h == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return fmt.Errorf("bearer: %s %q is http:// on a host that is not loopback: use https://", field, raw)
	default:
		return fmt.Errorf("bearer: %s %q is neither https:// nor loopback http://", field, raw)
	}
}

// jwksFile reads a JWK Set (RFC 7517 §5) from path: its public signing
// keys.
func jwksFile(path string) (oidc.KeySet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bearer: JWKS file: %w", err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("bearer: JWKS file %s: %w", path, err)
	}
	var pubs []crypto.PublicKey
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		pubs = append(pubs, k.Public().Key)
	}
	if len(pubs) == 0 {
		return nil, fmt.Errorf("bearer: JWKS file %s holds no signing key", path)
	}
	return &oidc.StaticKeySet{PublicKeys: pubs}, nil
}

// accessClaims are the claims of an RFC 9068 access token that TokenInfo
// carries beyond go-oidc's.
type accessClaims struct {
	Scope    string          `json:"scope"`
	Scp      json.RawMessage `json:"scp"`
	ClientID string          `json:"client_id"`
	Azp      string          `json:"azp"`
	Iss      string          `json:"iss"`
}

// verifyJWT checks token with v and returns what it says.
func verifyJWT(ctx context.Context, v *oidc.IDTokenVerifier, token string) (*TokenInfo, error) {
	jws, err := jose.ParseSigned(token, toJOSE(signingAlgs))
	if err != nil {
		return nil, invalid("malformed token: %v", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, invalid("malformed token: %d signatures", len(jws.Signatures))
	}
	// RFC 9068 §4: typ at+jwt; "JWT" or none is what many issuers send.
	if typ, _ := jws.Signatures[0].Protected.ExtraHeaders[jose.HeaderType].(string); typ != "" {
		switch strings.ToLower(typ) {
		case "at+jwt", "application/at+jwt", "jwt":
		default:
			return nil, invalid("wrong token type %q (want at+jwt)", typ)
		}
	}
	t, err := v.Verify(ctx, token)
	if err != nil {
		return nil, classify(err)
	}
	var c accessClaims
	if err := t.Claims(&c); err != nil {
		return nil, invalid("malformed claims: %v", err)
	}
	if t.Subject == "" {
		return nil, invalid("no sub claim (RFC 9068 §2.2)")
	}
	scopes := strings.Fields(c.Scope)
	if len(scopes) == 0 && len(c.Scp) > 0 {
		var list []string
		var s string
		switch {
		case json.Unmarshal(c.Scp, &list) == nil:
			scopes = list
		case json.Unmarshal(c.Scp, &s) == nil:
			scopes = strings.Fields(s)
		default:
			return nil, invalid("malformed scp claim")
		}
	}
	extra := map[string]any{"iss": c.Iss}
	if c.ClientID != "" {
		extra["client_id"] = c.ClientID
	}
	if c.Azp != "" {
		extra["azp"] = c.Azp
	}
	return &TokenInfo{UserID: t.Subject, Scopes: scopes, Expiration: t.Expiry, Extra: extra}, nil
}

func toJOSE(algs []string) []jose.SignatureAlgorithm {
	out := make([]jose.SignatureAlgorithm, len(algs))
	for i, a := range algs {
		out[i] = jose.SignatureAlgorithm(a)
	}
	return out
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidToken}, args...)...)
}

// classify turns go-oidc's error into one that says why, wrapping
// ErrInvalidToken for a bad token. A failure to fetch the JWKS is the
// verifier's, not the token's.
func classify(err error) error {
	var exp *oidc.TokenExpiredError
	msg := err.Error()
	switch {
	case errors.As(err, &exp):
		return invalid("expired at %s", exp.Expiry.UTC().Format(time.RFC3339))
	case strings.Contains(msg, "fetching keys"):
		return fmt.Errorf("bearer: fetching the issuer's keys: %w", err)
	case strings.HasPrefix(msg, "failed to verify signature"):
		return invalid("bad signature (no key of the issuer's JWKS verifies it)")
	case strings.Contains(msg, "issued by a different provider"):
		return invalid("wrong issuer: %v", err)
	case strings.Contains(msg, "expected audience"):
		return invalid("wrong audience: %v", err)
	case strings.Contains(msg, "nbf"):
		return invalid("not yet valid: %v", err)
	default:
		return invalid("malformed token: %v", err)
	}
}
