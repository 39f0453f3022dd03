package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/bridge"
)

// Authentication of the bridges (docs/spec.md §9.1, §10 "Authentication on
// the fronts"): -token-file is the bridge's own credential toward the
// MCP-Flow server (bridge stdio, bridge http without -pass-token); the
// -auth-* flags make bridge http ask its own clients for tokens, as
// mcp-flow-server asks its own; -pass-token passes each client's token on
// instead of -token-file, where the server's audience is the front's.

// bridgeAuthStart bounds the issuer's discovery at start.
const bridgeAuthStart = 15 * time.Second

// bridgeAuthFlags are bridge http's -auth-* flags and -pass-token; fs is
// kept to read -token-file, which the CLI's other commands share.
type bridgeAuthFlags struct {
	issuer, audience, jwks, scopes string
	passToken                      bool
	fs                             *flag.FlagSet
}

func (a *bridgeAuthFlags) register(fs *flag.FlagSet) {
	a.fs = fs
	if fs.Lookup("token-file") == nil {
		fs.String("token-file", "", "file holding an OAuth access token sent to the MCP-Flow server on every dial, read again on each (docs/spec.md §9.1); for the bridges, their own credential")
	}
	fs.StringVar(&a.issuer, "auth-issuer", "", "bridge http: require an OAuth access token (a JWT, RFC 9068) issued by this authorization server on every request of its clients (https://, or http:// on loopback)")
	fs.StringVar(&a.audience, "auth-audience", "", "bridge http, with -auth-issuer: the front's resource identifier, which its clients' tokens must name in aud (default: its endpoint URL, -public-url or http://LISTEN/mcp)")
	fs.StringVar(&a.jwks, "auth-jwks", "", "bridge http, with -auth-issuer: the issuer's signing keys, a JWKS URL or a JWK Set file (default: from the issuer's OpenID discovery)")
	fs.StringVar(&a.scopes, "auth-scopes", "", "bridge http, with -auth-issuer: comma-separated scopes every client token must carry (else 403 insufficient_scope)")
	fs.BoolVar(&a.passToken, "pass-token", false, "bridge http, with -auth-issuer: present each client's own token to the MCP-Flow server instead of -token-file (only where the server's audience is the front's own; docs/spec.md §10)")
}

// tokenFile is -token-file's value.
func (a *bridgeAuthFlags) tokenFile() string {
	if f := a.fs.Lookup("token-file"); f != nil {
		return f.Value.String()
	}
	return ""
}

// credential is the bridge's own token source (-token-file), nil without
// one; a file that cannot be read now is a usage error, said on stderr.
func (a *bridgeAuthFlags) credential(stderr io.Writer) (func(context.Context) (string, error), bool) {
	path := a.tokenFile()
	if path == "" {
		return nil, true
	}
	src := bearer.FileSource(path)
	if _, err := src(context.Background()); err != nil {
		fmt.Fprintf(stderr, "mcp-flow: -token-file: %v\n", err)
		return nil, false
	}
	return src, true
}

// check refuses a bad combination of bridge http's flags (a usage error,
// said on stderr), before anything listens: staticToken is
// $MCP_FLOW_BRIDGE_TOKEN's presence, own -token-file's.
func (a *bridgeAuthFlags) check(staticToken, own bool, stderr io.Writer) int {
	if a.issuer == "" {
		for name, v := range map[string]string{"-auth-audience": a.audience, "-auth-jwks": a.jwks, "-auth-scopes": a.scopes} {
			if v != "" {
				fmt.Fprintf(stderr, "mcp-flow: %s needs -auth-issuer\n", name)
				return exitUsage
			}
		}
		if a.passToken {
			fmt.Fprintln(stderr, "mcp-flow: -pass-token needs -auth-issuer: without it the front has no client token to pass on")
			return exitUsage
		}
		return exitOK
	}
	if staticToken {
		fmt.Fprintln(stderr, "mcp-flow: $MCP_FLOW_BRIDGE_TOKEN and -auth-issuer exclude each other (the static token is the simple case without an issuer)")
		return exitUsage
	}
	if a.passToken && own {
		fmt.Fprintln(stderr, "mcp-flow: -pass-token and -token-file exclude each other: the front presents either its clients' tokens or its own")
		return exitUsage
	}
	if a.audience != "" {
		if u, err := url.Parse(a.audience); err != nil || u.Scheme == "" || u.Host == "" || u.Fragment != "" {
			fmt.Fprintf(stderr, "mcp-flow: -auth-audience: %q is not an absolute URI without a fragment (RFC 8707 §2)\n", a.audience)
			return exitUsage
		}
	}
	return exitOK
}

// front sets the HTTP front's authentication from the flags (checked
// already): its clients' tokens (Auth, Resource, AuthorizationServers) and
// what its MCP-Flow sessions present (PassToken, else Stdio.Token).
// endpoint is the front's URL, the default audience. An issuer that does
// not answer is a connect error, said on stderr.
func (a *bridgeAuthFlags) front(hc *bridge.HTTPConfig, endpoint string, stderr io.Writer) int {
	if a.issuer == "" {
		return exitOK
	}
	aud := a.audience
	if aud == "" {
		aud = endpoint
	}
	var scopes []string
	for _, s := range strings.Split(a.scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			scopes = append(scopes, s)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), bridgeAuthStart)
	defer cancel()
	v, err := bearer.NewJWTVerifier(ctx, bearer.JWTConfig{Issuer: a.issuer, Audience: aud, JWKS: a.jwks})
	if err != nil {
		fmt.Fprintf(stderr, "mcp-flow: -auth-issuer: %v\n", err)
		return exitConnect
	}
	hc.Auth = bearer.Config{Verifier: v, Scopes: scopes}
	hc.Resource, hc.AuthorizationServers, hc.PassToken = aud, []string{a.issuer}, a.passToken
	if !a.passToken && hc.Stdio.Token == nil {
		fmt.Fprintln(stderr, "mcp-flow: bridge http: no -token-file: the front dials the server without a credential of its own")
	}
	return exitOK
}

// onlyHTTP refuses bridge http's own flags on bridge stdio.
func (a *bridgeAuthFlags) onlyHTTP(stderr io.Writer) bool {
	if a.issuer != "" || a.audience != "" || a.jwks != "" || a.scopes != "" || a.passToken {
		fmt.Fprintln(stderr, "mcp-flow: -auth-* and -pass-token are for bridge http (its own clients' tokens)")
		return false
	}
	return true
}
