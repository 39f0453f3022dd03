package httpfront

import (
	"context"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
)

// Authentication on the HTTP front (docs/spec.md §9.1, §10 "Authentication
// on the fronts"): who a request comes from (its verified token), which of
// the front's sessions it may use (those of its subject), and which
// credential the front's MCP-Flow sessions present to the server (the
// client's own with HTTPConfig.PassToken, else the front's, StdioConfig.Token).

// authenticated is what a request's token says, carried in its context
// once checkHeaders accepted it.
type authenticated struct {
	info  *bearer.TokenInfo
	token string // the token as presented: kept only with PassToken, never logged
}

type authKey struct{}

// authOf returns what r's token says (nil without authentication).
func authOf(r *http.Request) *authenticated {
	a, _ := r.Context().Value(authKey{}).(*authenticated)
	return a
}

// authenticate checks r's token (HTTPConfig.Auth, RFC 6750): a refusal is
// written (401 or 403 with a WWW-Authenticate challenge naming the front's
// resource metadata, RFC 9728 §5.1) and false returned; an accepted token
// comes back in the returned request's context. With Auth off, the static
// HTTPConfig.Token is compared in constant time instead (401 "Bearer").
func (h *HTTPFront) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if !h.cfg.Auth.Enabled() {
		if h.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+h.cfg.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return r, false
		}
		return r, true
	}
	info, ref := h.cfg.Auth.Check(r)
	if ref == nil && info.UserID == "" {
		// Sessions are bound to a subject (MCP's security best practices:
		// bind session ids to the user): a token that names none cannot
		// have one (RFC 9068 §2.2 makes sub required).
		ref = &bearer.Refusal{Status: http.StatusUnauthorized, Code: "invalid_token",
			Description: "the access token names no subject", Reason: "a token without a subject"}
	}
	if ref != nil {
		h.log.Debug("request refused", "status", ref.Status, "why", ref.Reason, "url", bearer.Redact(r.URL))
		h.cfg.Auth.Refuse(w, ref)
		return r, false
	}
	a := &authenticated{info: info}
	if h.cfg.PassToken {
		a.token, _ = h.cfg.Auth.Token(r) // Check read it already: no refusal here
	}
	ctx := bearer.WithTokenInfo(context.WithValue(r.Context(), authKey{}, a), info)
	return r.WithContext(ctx), true
}

// owns reports whether r may use s: with authentication, s was opened by
// r's subject (a 2025 session, an HTTP+SSE one, and their downloads). A
// request of another subject is told the session does not exist (404), as
// MCP's security best practices bind a session id to its user
// ("<user_id>:<session_id>"): the id alone reveals nothing and opens
// nothing. Each accepted request of the subject offers its token for the
// session's next dial (PassToken).
func (h *HTTPFront) owns(s *httpSession, r *http.Request) bool {
	a := authOf(r)
	if a == nil {
		return s.subject == ""
	}
	if s.subject != a.info.UserID {
		return false
	}
	s.cred.offer(a)
	return true
}

// sessionSubject sets what a new session of r is bound to: its subject
// and, with PassToken, the credential its MCP-Flow session dials with (r's
// token, then the latest valid token of that subject, passCred).
func (h *HTTPFront) sessionSubject(s *httpSession, r *http.Request, cfg *core.StdioConfig) {
	a := authOf(r)
	if a == nil {
		return
	}
	s.subject = a.info.UserID
	if !h.cfg.PassToken {
		return
	}
	s.cred = &passCred{}
	s.cred.offer(a)
	core.PassToken(cfg, s.cred.get, s.cred.next)
}

// authKeyPart is the part of a 2026-07-28 client's key its token gives
// (spec §11.6): its subject and, with PassToken, its scopes too, so that
// the one MCP-Flow session a holder dials with one token never carries a
// request of a token with other scopes. "" without authentication.
func (h *HTTPFront) authKeyPart(r *http.Request) string {
	a := authOf(r)
	if a == nil {
		return ""
	}
	k := "sub:" + a.info.UserID
	if h.cfg.PassToken {
		sc := slices.Clone(a.info.Scopes)
		slices.Sort(sc)
		k += "\x00scope:" + strings.Join(slices.Compact(sc), " ")
	}
	return k
}

// passCred is the credential of one session of the front in PassToken
// mode: the latest valid token of the subject it serves, which each of that
// subject's accepted requests refreshes; the session's MCP-Flow dials (the
// first, and each reconnection after a restart or the token's expiry) read
// it. A nil passCred does nothing.
type passCred struct {
	mu    sync.Mutex
	token string
	exp   time.Time     // zero: the token names no expiry
	fresh chan struct{} // closed (and replaced) when a new token is kept
}

// offer keeps a's token unless the one held outlives it.
func (c *passCred) offer(a *authenticated) {
	if c == nil || a == nil || a.token == "" {
		return
	}
	exp := a.info.Expiration
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && !c.exp.IsZero() && !exp.IsZero() && exp.Before(c.exp) {
		return
	}
	if a.token == c.token {
		return
	}
	c.token, c.exp = a.token, exp
	if c.fresh != nil {
		close(c.fresh)
		c.fresh = nil
	}
}

// next returns a channel closed when a token other than the one held now
// is kept.
func (c *passCred) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fresh == nil {
		c.fresh = make(chan struct{})
	}
	return c.fresh
}

// get is the token for the next dial (flow.ClientConfig.Token).
func (c *passCred) get(context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == "" {
		return "", errNoPassToken
	}
	return c.token, nil
}

type noPassTokenError struct{}

func (noPassTokenError) Error() string { return "bridge: no token of the client to pass on" }

var errNoPassToken error = noPassTokenError{}

// Metadata returns the front's protected resource metadata document (RFC
// 9728) and the path it is served at (its well-known URL for
// HTTPConfig.Resource, bearer.MetadataURL), for the embedder's mux; ("",
// nil) without Auth or Resource. mcp-flow bridge http and mcp-flow-server
// mount it beside the endpoint.
func (h *HTTPFront) Metadata() (path string, handler http.Handler) {
	if !h.cfg.Auth.Enabled() || h.cfg.Resource == "" {
		return "", nil
	}
	if bearer.MetadataURL(h.cfg.Resource) == "" {
		return "", nil
	}
	return bearer.MetadataPath(h.cfg.Resource), bearer.MetadataHandler(h.cfg.Resource, h.cfg.AuthorizationServers, h.cfg.Auth.Scopes)
}
