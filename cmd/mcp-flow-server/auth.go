package main

// Authentication (docs/spec.md §9.1, beyond the guide): with -auth-issuer
// and -auth-audience every CONNECT needs a JWT access token (RFC 9068) of
// that issuer for that audience; the protected resource metadata (RFC 9728)
// is served at its well-known paths on the HTTP/3 listener and, through
// serverAuth.WellKnown, on the TCP one.

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcp-flow/mcp-flow/bearer"
)

// authStartTimeout bounds the issuer's discovery (or the JWKS fetch) at
// start: an issuer that does not answer within it stops the server.
const authStartTimeout = 15 * time.Second

// metadataRoot is the well-known path of protected resource metadata with
// no resource path (RFC 9728 §3): clients that do not insert the resource's
// path (or that probe the root first, as MCP's authorization spec allows)
// find the same document there.
const metadataRoot = "/.well-known/oauth-protected-resource"

// authFlags are the -auth-* flags.
type authFlags struct {
	issuer, audience, jwks, scopes string
	query                          bool
	jwksRefresh                    time.Duration
}

func (a *authFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.issuer, "auth-issuer", "", "require an OAuth access token (a JWT, RFC 9068) issued by this authorization server on every CONNECT (and Streamable HTTP request); https://, or http:// on loopback (docs/spec.md §9.1)")
	fs.StringVar(&a.audience, "auth-audience", "", "with -auth-issuer: this server's resource identifier, which a token's aud must hold, e.g. https://host:4433/mcp-flow (required)")
	fs.StringVar(&a.jwks, "auth-jwks", "", "with -auth-issuer: the issuer's signing keys, as a JWKS URL or a JWK Set file (default: the jwks_uri of the issuer's OpenID discovery)")
	fs.StringVar(&a.scopes, "auth-scopes", "", "with -auth-issuer: comma-separated scopes every token must carry (else 403 insufficient_scope)")
	fs.DurationVar(&a.jwksRefresh, "auth-jwks-refresh", bearer.DefaultMinRefresh, "with -auth-issuer: the least time between two fetches of a remote JWKS; a token under a new key (a rotation) is accepted at its first use once this has passed since the last fetch")
	fs.BoolVar(&a.query, "auth-query", true, "with -auth-issuer: also take the token from the access_token query parameter of a CONNECT without Authorization (RFC 6750 §2.3), as browsers must send it: their WebTransport sends no headers; tokens in URLs are redacted from logs")
}

// serverAuth is what -auth-* set up: the token check of the CONNECT and
// the protected resource metadata. run hands it to serveHTTP (origin.go)
// too, whose TCP front asks for the same tokens (bridge.HTTPConfig's Auth,
// Resource, AuthorizationServers, PassToken) and mounts WellKnown at Paths.
type serverAuth struct {
	// Bearer checks tokens (flow.ServerConfig.Auth; the TCP front's too).
	Bearer bearer.Config
	// Resource is -auth-audience, the resource identifier; Issuers is
	// -auth-issuer, as a list.
	Resource string
	Issuers  []string
	// WellKnown serves the metadata document (RFC 9728 §3.2) at Paths and
	// answers 404 anywhere else.
	WellKnown http.Handler
	// Paths are where WellKnown answers: the resource's well-known path
	// (bearer.MetadataPath) and the root one (metadataRoot).
	Paths []string
}

// authConfigError is a bad -auth-* flag (exit status 2); other setup errors
// (an issuer that does not answer) are exit status 1.
type authConfigError struct{ flag, msg string }

func (e *authConfigError) Error() string { return e.flag + ": " + e.msg }

// setup checks the flags and, with -auth-issuer, builds the verifier: the
// issuer's discovery (or the JWKS) is fetched now, so that a server whose
// issuer cannot be reached does not start. nil without -auth-issuer.
func (a *authFlags) setup(ctx context.Context) (*serverAuth, error) {
	if a.issuer == "" {
		for name, v := range map[string]string{"-auth-audience": a.audience, "-auth-jwks": a.jwks, "-auth-scopes": a.scopes} {
			if v != "" {
				return nil, &authConfigError{name, "needs -auth-issuer"}
			}
		}
		return nil, nil
	}
	if err := loopbackOrHTTPS(a.issuer); err != nil {
		return nil, &authConfigError{"-auth-issuer", err.Error()}
	}
	if a.audience == "" {
		return nil, &authConfigError{"-auth-audience", "required with -auth-issuer: this server's resource identifier (its public URL, e.g. https://host:4433/mcp-flow), which tokens must name in aud"}
	}
	if u, err := url.Parse(a.audience); err != nil || u.Scheme == "" || u.Host == "" || u.Fragment != "" {
		return nil, &authConfigError{"-auth-audience", fmt.Sprintf("%q is not an absolute URI without a fragment (RFC 8707 §2)", a.audience)}
	}
	var scopes []string
	for _, s := range strings.Split(a.scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			scopes = append(scopes, s)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, authStartTimeout)
	defer cancel()
	client := &http.Client{Timeout: authStartTimeout}
	flagName := "-auth-issuer"
	if strings.Contains(a.jwks, "://") {
		flagName = "-auth-jwks"
		if err := loopbackOrHTTPS(a.jwks); err != nil {
			return nil, &authConfigError{"-auth-jwks", err.Error()}
		}
		// The remote key set is fetched lazily; fetch it once now so that
		// a JWKS that does not answer stops the server at start.
		if err := reachable(ctx, client, a.jwks); err != nil {
			return nil, fmt.Errorf("-auth-jwks: %w", err)
		}
	} else if a.jwks != "" {
		flagName = "-auth-jwks"
	}
	v, err := bearer.NewJWTVerifier(ctx, bearer.JWTConfig{Issuer: a.issuer, Audience: a.audience, JWKS: a.jwks, HTTPClient: client, MinRefresh: a.jwksRefresh})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	meta := bearer.MetadataURL(a.audience)
	paths := []string{bearer.MetadataPath(a.audience)}
	if paths[0] != metadataRoot {
		paths = append(paths, metadataRoot)
	}
	doc := bearer.MetadataHandler(a.audience, []string{a.issuer}, scopes)
	return &serverAuth{
		Bearer:    bearer.Config{Verifier: v, Scopes: scopes, ResourceMetadataURL: meta, AllowQuery: a.query},
		Resource:  a.audience,
		Issuers:   []string{a.issuer},
		WellKnown: onlyPaths(paths, doc),
		Paths:     paths,
	}, nil
}

// wrap serves the metadata at a's paths and passes any other request to
// next (nil: 404).
func (a *serverAuth) wrap(next http.Handler) http.Handler {
	if next == nil {
		next = http.NotFoundHandler()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range a.Paths {
			if r.URL.Path == p {
				a.WellKnown.ServeHTTP(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// onlyPaths serves h at paths and 404 elsewhere.
func onlyPaths(paths []string, h http.Handler) http.Handler {
	mux := http.NewServeMux()
	for _, p := range paths {
		mux.Handle(p, h)
	}
	return mux
}

// loopbackOrHTTPS refuses a URL that is neither https:// nor http:// on a
// loopback host (the issuer's tokens would be trusted over plain HTTP).
func loopbackOrHTTPS(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		h := u.Hostname()
		if ip := net.ParseIP(h); h == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return fmt.Errorf("%q is http:// on a host that is not loopback: use https://", raw)
	}
	return fmt.Errorf("%q is neither https:// nor loopback http://", raw)
}

// reachable GETs u and wants a 2xx answer.
func reachable(ctx context.Context, c *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	return nil
}
