// Package bearer is the resource-server side of MCP authorization for
// MCP-Flow (docs/spec.md §9.1, beyond the guide): an OAuth 2.1 bearer token
// (RFC 6750) is checked on the WebTransport CONNECT, or on a Streamable HTTP
// request of a front, before any session exists; a refusal is a 401 or 403
// with a WWW-Authenticate challenge naming the protected resource metadata
// (RFC 9728 §5.1), as MCP's authorization spec (2025-11-25, basic/
// authorization) asks of a Streamable HTTP server.
//
// It uses the MCP Go SDK's shapes (auth.TokenInfo, auth.TokenVerifier), so a
// verifier written for the SDK works here too; NewJWTVerifier is the common
// case (RFC 9068 JWT access tokens checked against an issuer's JWKS, with
// go-oidc and go-jose). A Config is a flow.Authenticator (Authenticate), so
// flow.ServerConfig.Auth takes it while package flow links none of these
// libraries; a front checks with Middleware, or Check and Refuse.
package bearer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcp-flow/mcp-flow/flow"
)

// TokenInfo is what a verified token says: subject (UserID), scopes,
// expiry, and other claims in Extra. It is the go-sdk's, what a Verifier
// returns and a front's handler finds in its context (TokenInfoFrom); a
// flow session's is flow.TokenInfo, the same fields (Authenticate copies
// them).
type TokenInfo = auth.TokenInfo

// Verifier checks a token and says what it carries. An error that unwraps
// to ErrInvalidToken is a bad token (401 invalid_token); any other error is
// the verifier's own failure (also 401, logged as such).
type Verifier = auth.TokenVerifier

// ErrInvalidToken is what a Verifier returns, wrapped, for a bad token.
var ErrInvalidToken = auth.ErrInvalidToken

// QueryParam is the URL query parameter a token may come in where
// Config.AllowQuery says so (RFC 6750 §2.3).
const QueryParam = "access_token"

// Config says how a server checks tokens. It is copied where it is used;
// later changes have no effect. The zero Config (no Verifier) checks nothing.
type Config struct {
	// Verifier checks a token. Nil: authentication is off.
	Verifier Verifier
	// Scopes must all be in a token's scopes; a token without one of them
	// gets 403 insufficient_scope.
	Scopes []string
	// ResourceMetadataURL is the URL of the protected resource metadata
	// (RFC 9728), named in every challenge. See MetadataURL.
	ResourceMetadataURL string
	// AllowQuery accepts the token in the access_token query parameter of a
	// request that has no Authorization header (RFC 6750 §2.3): for browser
	// engines whose WebTransport sends no headers (docs/spec.md §9.1). A
	// request with both is refused (400 invalid_request).
	AllowQuery bool
}

// Enabled reports whether c checks tokens.
func (c *Config) Enabled() bool { return c != nil && c.Verifier != nil }

// Refusal is why a request was refused: its HTTP status and the challenge's
// parameters (RFC 6750 §3). Reason is for logs; it never holds the token.
type Refusal struct {
	Status      int    // 400, 401 or 403
	Code        string // "", "invalid_request", "invalid_token" or "insufficient_scope"
	Description string // error_description
	Scope       string // scope, for insufficient_scope
	Reason      string
}

func (r *Refusal) Error() string {
	if r.Code == "" {
		return fmt.Sprintf("bearer: %d: %s", r.Status, r.Reason)
	}
	return fmt.Sprintf("bearer: %d %s: %s", r.Status, r.Code, r.Reason)
}

// Challenge is the WWW-Authenticate header value for r (RFC 6750 §3, RFC
// 9728 §5.1): resource_metadata always (when known), error and
// error_description when a token was bad, scope for insufficient_scope.
func (r *Refusal) Challenge(resourceMetadataURL string) string {
	var parts []string
	if r.Code != "" {
		parts = append(parts, fmt.Sprintf("error=%q", r.Code))
		if r.Description != "" {
			parts = append(parts, fmt.Sprintf("error_description=%q", r.Description))
		}
	}
	if r.Scope != "" {
		parts = append(parts, fmt.Sprintf("scope=%q", r.Scope))
	}
	if resourceMetadataURL != "" {
		parts = append(parts, fmt.Sprintf("resource_metadata=%q", resourceMetadataURL))
	}
	if len(parts) == 0 {
		return "Bearer"
	}
	return "Bearer " + strings.Join(parts, ", ")
}

// Token returns the bearer token of r: from its Authorization header, or
// where c allows it from the access_token query parameter. No token at all
// is ("", nil); a malformed header, or a token in both places, is a
// Refusal with status 400.
func (c *Config) Token(r *http.Request) (string, *Refusal) {
	h := r.Header.Values("Authorization")
	q := ""
	if c.AllowQuery {
		q = r.URL.Query().Get(QueryParam)
	}
	switch {
	case len(h) > 1:
		return "", &Refusal{Status: http.StatusBadRequest, Code: "invalid_request", Description: "more than one Authorization header", Reason: "more than one Authorization header"}
	case len(h) == 1 && q != "":
		return "", &Refusal{Status: http.StatusBadRequest, Code: "invalid_request", Description: "a token in both the Authorization header and the query", Reason: "a token in both the Authorization header and the query (RFC 6750 §2)"}
	case len(h) == 1:
		scheme, tok, ok := strings.Cut(strings.TrimSpace(h[0]), " ")
		tok = strings.TrimSpace(tok)
		if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
			return "", &Refusal{Status: http.StatusBadRequest, Code: "invalid_request", Description: "Authorization is not a Bearer token", Reason: "an Authorization header that is not \"Bearer <token>\""}
		}
		return tok, nil
	default:
		return q, nil
	}
}

// Check verifies r's token and its scopes. With c not Enabled it returns
// (nil, nil). A request without a token gets 401 with no error code (RFC
// 6750 §3.1); a bad token 401 invalid_token; a missing scope 403
// insufficient_scope naming the scopes required.
func (c *Config) Check(r *http.Request) (*TokenInfo, *Refusal) {
	if !c.Enabled() {
		return nil, nil
	}
	tok, ref := c.Token(r)
	if ref != nil {
		return nil, ref
	}
	if tok == "" {
		return nil, &Refusal{Status: http.StatusUnauthorized, Reason: "no bearer token"}
	}
	info, err := c.Verifier(r.Context(), tok, r)
	if err != nil || info == nil {
		if err == nil {
			err = errors.New("the verifier returned no token info")
		}
		return nil, &Refusal{Status: http.StatusUnauthorized, Code: "invalid_token", Description: "the access token is not valid", Reason: "invalid token: " + err.Error()}
	}
	for _, s := range c.Scopes {
		if !slices.Contains(info.Scopes, s) {
			return nil, &Refusal{Status: http.StatusForbidden, Code: "insufficient_scope", Description: "the access token lacks a required scope", Scope: strings.Join(c.Scopes, " "), Reason: "token of " + info.UserID + " lacks scope " + s}
		}
	}
	return info, nil
}

// Refuse writes ref as the response: its status, the challenge, and a short
// text body. A response to a request that carried a token in its URL is
// marked Cache-Control: no-store (RFC 6750 §2.3).
func (c *Config) Refuse(w http.ResponseWriter, ref *Refusal) {
	w.Header().Set("WWW-Authenticate", ref.Challenge(c.ResourceMetadataURL))
	w.Header().Set("Cache-Control", "no-store")
	msg := http.StatusText(ref.Status)
	if ref.Description != "" {
		msg += ": " + ref.Description
	}
	http.Error(w, msg, ref.Status)
}

// Authenticate is c as a flow.Authenticator (flow.ServerConfig.Auth, on the
// WebTransport CONNECT): Check, and for a refusal Refuse and the *Refusal as
// the error. With c not Enabled it returns (nil, nil).
func (c Config) Authenticate(w http.ResponseWriter, r *http.Request) (*flow.TokenInfo, error) {
	info, ref := c.Check(r)
	switch {
	case ref != nil:
		c.Refuse(w, ref)
		return nil, ref
	case info == nil:
		return nil, nil
	}
	return &flow.TokenInfo{UserID: info.UserID, Scopes: info.Scopes, Expiration: info.Expiration, Extra: info.Extra}, nil
}

var _ flow.Authenticator = Config{}

// Middleware checks every request to next; a refused one gets Refuse, an
// accepted one reaches next with its TokenInfo in its context
// (TokenInfoFrom). With c not Enabled it returns next.
func (c Config) Middleware(next http.Handler) http.Handler {
	if !c.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ref := c.Check(r)
		if ref != nil {
			c.Refuse(w, ref)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithTokenInfo(r.Context(), info)))
	})
}

type infoKey struct{}

// WithTokenInfo returns ctx carrying info.
func WithTokenInfo(ctx context.Context, info *TokenInfo) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// TokenInfoFrom returns the TokenInfo ctx carries, or nil.
func TokenInfoFrom(ctx context.Context) *TokenInfo {
	info, _ := ctx.Value(infoKey{}).(*TokenInfo)
	return info
}

// Redact returns u as a string with any access_token query parameter's
// value replaced by "REDACTED", for logs.
func Redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	q := u.Query()
	if !q.Has(QueryParam) {
		return u.String()
	}
	v := *u
	q.Set(QueryParam, "REDACTED")
	v.RawQuery = q.Encode()
	return v.String()
}
