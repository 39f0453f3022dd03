package fallback

import (
	"context"

	"net/http"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/flow"
)

// tokenTransport sends the access token of Flow.Token (asked for on every
// request, as flow.Dial asks on every dial) as "Authorization: Bearer" on
// every Streamable HTTP request (docs/spec.md §9.1, §10.2), and turns a 401
// or 403 answer into the *flow.RefusedError an MCP-Flow dial returns, so
// that both transports fail alike, naming the status and the challenge,
// never the token.
type tokenTransport struct {
	base  http.RoundTripper
	token func(ctx context.Context) (string, error)
}

// WithToken returns c with cfg.Flow.Token's token on each request; c itself
// when cfg.Flow.Token is nil.
func WithToken(c *http.Client, cfg Config) *http.Client {
	if cfg.Flow.Token == nil {
		return c
	}
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	wrapped := *c
	wrapped.Transport = &tokenTransport{base: base, token: cfg.Flow.Token}
	return &wrapped
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.token(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	resp, err := t.base.RoundTrip(r)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	resp.Body.Close()
	return nil, &flow.RefusedError{Transport: "Streamable HTTP", URL: bearer.Redact(req.URL), Status: resp.StatusCode, Challenge: resp.Header.Get("WWW-Authenticate")}
}

// CloseIdleConnections passes on to the base transport.
func (t *tokenTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
