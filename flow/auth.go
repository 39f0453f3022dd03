package flow

// Authentication (docs/spec.md §9.1, beyond the guide): the server checks
// an OAuth bearer token on the CONNECT (ServerConfig.Auth, package bearer)
// before a session exists; the client sends one (ClientConfig.Token).

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcp-flow/mcp-flow/bearer"
)

// ReasonTokenExpired is the reason of the $/shutdown a server sends when
// the session's access token expires (docs/spec.md §9.1).
const ReasonTokenExpired = "access token expired"

// authorize checks r's bearer token where s.cfg.Auth asks for one
// (spec §9.1). It returns the verified token (nil without authentication)
// and true, or writes the refusal (400, 401 or 403 with WWW-Authenticate),
// reports EventRefused "auth", and returns false. Nothing of a session
// exists yet: a refused CONNECT costs no slot, goroutine or buffer.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (*bearer.TokenInfo, bool) {
	if !s.cfg.Auth.Enabled() {
		return nil, true
	}
	info, ref := s.cfg.Auth.Check(r)
	if ref == nil {
		return info, true
	}
	// The Reason is bearer's: it never holds the token; the URL is
	// redacted for a token in the query.
	s.observe(Event{Kind: EventRefused, Outcome: "auth",
		Reason: fmt.Sprintf("%s (a CONNECT to %s from %s)", ref.Reason, bearer.Redact(r.URL), r.RemoteAddr)})
	s.cfg.Auth.Refuse(w, ref)
	return nil, false
}

// TokenInfo is what the access token the client presented on its CONNECT
// says (subject, scopes, expiry; docs/spec.md §9.1), or nil when the
// server checks no tokens, and on a client. A handler reaches it as
// req.Session.TokenInfo().
func (s *Session) TokenInfo() *bearer.TokenInfo { return s.token }

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
	Err        error // the WebTransport dialer's own error
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
