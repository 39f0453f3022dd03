package flow

// Authentication (docs/spec.md §9.1, beyond the guide): the server checks
// the access token of a CONNECT (ServerConfig.Auth, an Authenticator)
// before a session exists; the client sends one (ClientConfig.Token). The
// checking itself is not flow's: package bearer is the Authenticator of
// OAuth bearer tokens (go-oidc, go-jose, the go-sdk's auth), which flow does
// not link (TestFlowLinksNoTokenLibrary).

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// TokenInfo is what a verified access token says (docs/spec.md §9.1): its
// subject, scopes, expiry (zero: none) and other claims. The fields are
// named as in the go-sdk's auth.TokenInfo.
type TokenInfo struct {
	UserID     string // the subject (sub)
	Scopes     []string
	Expiration time.Time
	Extra      map[string]any
}

// Authenticator checks the access token of a CONNECT (docs/spec.md §9.1),
// as an http.Handler answers a request: package bearer's Config is one
// (OAuth 2.1 bearer tokens, RFC 6750; JWTs checked with go-oidc).
type Authenticator interface {
	// Authenticate returns what r's token says, or (nil, nil) when it
	// checks no tokens. Refusing r, it writes the answer to w (400, 401 or
	// 403 with a WWW-Authenticate challenge that names the protected
	// resource metadata, RFC 9728 §5.1) and returns why, for logs: an
	// error that never holds the token.
	Authenticate(w http.ResponseWriter, r *http.Request) (*TokenInfo, error)
}

// ReasonTokenExpired is the reason of the $/shutdown a server sends when
// the session's access token expires (docs/spec.md §9.1).
const ReasonTokenExpired = "access token expired"

// authorize checks r's access token where s.cfg.Auth asks for one (spec
// §9.1). It returns the verified token (nil without authentication) and
// true, or, the Authenticator having written the refusal, reports
// EventRefused "auth" and returns false. Nothing of a session exists yet:
// a refused CONNECT costs no slot, goroutine or buffer.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (*TokenInfo, bool) {
	if s.cfg.Auth == nil {
		return nil, true
	}
	info, err := s.cfg.Auth.Authenticate(w, r)
	if err == nil {
		return info, true
	}
	// The reason is the Authenticator's: it never holds the token; of the
	// URL only the path is named, not the query, where a token may be
	// (spec §9.1).
	s.observe(Event{Kind: EventRefused, Outcome: "auth",
		Reason: fmt.Sprintf("%v (a CONNECT to %s from %s)", err, r.URL.Path, r.RemoteAddr)})
	return nil, false
}

// TokenInfo is what the access token the client presented on its CONNECT
// says (subject, scopes, expiry; docs/spec.md §9.1), or nil when the
// server checks no tokens, and on a client. A handler reaches it as
// req.Session.TokenInfo().
func (s *Session) TokenInfo() *TokenInfo { return s.token }

// watchExpiry shuts the session down gracefully when its access token
// expires (spec §9.1): $/shutdown with ReasonTokenExpired; requests in
// flight finish within the drain, new ones are refused as in any drain,
// and a client that wants to go on reconnects with a fresh token. A timer,
// not a goroutine; closeWith stops it.
func (s *Session) watchExpiry(exp time.Time) {
	if exp.IsZero() {
		return
	}
	s.keepTimer(time.AfterFunc(time.Until(exp), func() {
		select {
		case <-s.done:
			return
		default:
		}
		s.log.Debug("access token expired; shutting the session down", "subject", s.token.UserID)
		s.startShutdown(ReasonTokenExpired)
	}))
}

// RefusedError is Dial's error when the server answered the CONNECT with
// a status other than 2xx: 401 or 403 for a missing or refused token
// (spec §9.1), 403 for an Origin, 503 when full or shutting down.
// Challenge is the WWW-Authenticate header, if any; no token is ever in
// the error.
type RefusedError struct {
	// Transport is "" for a WebTransport CONNECT, or the transport that
	// was refused instead ("Streamable HTTP", package fallback).
	Transport  string
	URL        string // redacted: no query, no user information
	Status     int
	Challenge  string
	RetryAfter string
	// Reason is the server's own words, when it gave some (the first line
	// of a text/plain body, read by package fallback): "host not allowed:
	// …" says which host and which setting allows it (spec §9).
	Reason string
	Err    error // the WebTransport dialer's own error
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("flow: dial %s: HTTP %d %s", e.URL, e.Status, http.StatusText(e.Status))
	if e.Transport != "" {
		msg = fmt.Sprintf("%s %s: HTTP %d %s", e.Transport, e.URL, e.Status, http.StatusText(e.Status))
	}
	if e.Challenge != "" {
		msg += ": WWW-Authenticate: " + e.Challenge
	}
	switch {
	case e.Status == http.StatusUnauthorized && !strings.Contains(e.Challenge, "error="):
		msg += " (the server wants an access token)"
	case e.Status == http.StatusUnauthorized:
		msg += " (the access token was refused)"
	case e.Status == http.StatusForbidden && strings.Contains(e.Challenge, "insufficient_scope"):
		msg += " (the access token lacks a scope)"
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

func (e *RefusedError) Unwrap() error { return e.Err }

// refusedError makes the error of a CONNECT answered with resp.
func refusedError(url string, resp *http.Response, err error) *RefusedError {
	return &RefusedError{URL: redactURL(url), Status: resp.StatusCode,
		Challenge: resp.Header.Get("WWW-Authenticate"), RetryAfter: resp.Header.Get("Retry-After"), Err: err}
}

// dialHeader is the CONNECT's header: cfg.Header and, with cfg.Token, the
// bearer token asked for now (a token file refreshed since the last dial
// is read again).
func dialHeader(ctx context.Context, cfg *ClientConfig) (http.Header, error) {
	if cfg.Token == nil {
		return cfg.Header, nil
	}
	tok, err := cfg.Token(ctx)
	if err != nil {
		return nil, fmt.Errorf("flow: access token: %w", err)
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return nil, fmt.Errorf("flow: access token: the token source gave an empty token")
	}
	h := cfg.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Authorization", "Bearer "+tok)
	return h, nil
}
