package fallback

import (
	"bufio"
	"context"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/flow"
)

// refusalTransport turns a 401 or 403 answer into the *flow.RefusedError
// an MCP-Flow dial returns, so that both transports fail alike, naming the
// status, the challenge and the server's own reason (the first line of a
// text/plain body: "host not allowed: …", spec §9), never the token; the
// go-sdk's client would say only "Forbidden". With a token function it
// also sends the access token of Flow.Token (asked for on every request,
// as flow.Dial asks on every dial) as "Authorization: Bearer" on every
// Streamable HTTP request (docs/spec.md §9.1, §10.2).
type refusalTransport struct {
	base  http.RoundTripper
	token func(ctx context.Context) (string, error) // nil: none sent
}

// maxReason bounds the bytes of a refusal's body read for its reason.
const maxReason = 1 << 10

// WithToken returns c with cfg.Flow.Token's token on each request, and
// its 401 and 403 answers turned into *flow.RefusedError (see
// refusalTransport).
func WithToken(c *http.Client, cfg Config) *http.Client {
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	wrapped := *c
	wrapped.Transport = &refusalTransport{base: base, token: cfg.Flow.Token}
	return &wrapped
}

func (t *refusalTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req
	if t.token != nil {
		tok, err := t.token(req.Context())
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		r = req.Clone(req.Context())
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	reason := refusalReason(resp)
	resp.Body.Close()
	return nil, &flow.RefusedError{Transport: "Streamable HTTP", URL: bearer.Redact(req.URL), Status: resp.StatusCode,
		Challenge: resp.Header.Get("WWW-Authenticate"), Reason: reason}
}

// refusalReason is the first line of a text/plain answer's body, at most
// maxReason bytes of it, with control characters dropped; "" for any
// other body.
func refusalReason(resp *http.Response) string {
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "text/plain" {
		return ""
	}
	line, _ := bufio.NewReader(io.LimitReader(resp.Body, maxReason)).ReadString('\n')
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, line))
}

// CloseIdleConnections passes on to the base transport.
func (t *refusalTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
