package httpfront

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
	"github.com/mcp-flow/mcp-flow/flow"
)

// The HTTP front's config (HTTPConfig) and its defaults.

// HTTPConfig configures a Streamable HTTP front (MCP 2025-11-25 transports):
// plain MCP clients reach an MCP-Flow server through it. Its limits are in
// spec §8 and §10.
type HTTPConfig struct {
	Stdio core.StdioConfig // the MCP-Flow side, as for the stdio front
	// AllowedOrigins may send requests from browsers; others get 403. A
	// request without Origin is allowed.
	AllowedOrigins []string
	// Token, if set, is required as "Authorization: Bearer <token>" (401
	// "WWW-Authenticate: Bearer", compared in constant time): one shared
	// secret, no subject, no metadata, the simple case kept as it was. It
	// is for Auth's absence; NewHTTPFront panics when both are set.
	Token string
	// Auth, when its Verifier is set, asks every request for an OAuth
	// bearer token as mcp-flow-server does (docs/spec.md §9.1, §10
	// "Authentication on the fronts"): 401 or 403 with a WWW-Authenticate
	// challenge naming the resource metadata (Auth.ResourceMetadataURL,
	// default the well-known URL of Resource). A token must name a subject.
	// A 2025 session (and its downloads) belongs to the subject that
	// initialized it: another subject's request naming its id gets 404. A
	// 2026-07-28 client is its token's subject (ClientKey below).
	Auth bearer.Config
	// Resource is the front's resource identifier (RFC 9728 §1.2, its
	// endpoint URL: what its clients' tokens name as audience), and
	// AuthorizationServers the issuers whose tokens it takes: Metadata
	// serves them at Resource's well-known URL.
	Resource             string
	AuthorizationServers []string
	// PassToken: each MCP-Flow session of the front presents its own
	// client's token to the server (the latest valid token of the subject it
	// serves, read on each dial), for a server whose audience is the
	// front's own (mcp-flow-server's own TCP side, §10.1). Off (the
	// default): every session presents Stdio.Token, the front's own
	// credential, and the server's tools see the front's identity. It needs
	// Auth; see docs/spec.md §10 for why no client can borrow another's
	// identity either way.
	PassToken bool
	// MaxSessions bounds the sessions open at once; an initialize past it
	// gets 503 (default 256). Each holds an MCP-Flow session.
	MaxSessions int
	// IdleTimeout ends a session with no request and no open stream for
	// that long; its id then gets 404 (default 30 minutes).
	IdleTimeout time.Duration
	// MaxBody bounds a POST body of a session; a larger one gets 413
	// (default and ceiling: MaxMessage, 64 MiB). The session id is checked
	// before the body is read.
	MaxBody int
	// MaxInitBody bounds a POST body without a session id (it can only be
	// an initialize); a larger one gets 413 (default 1 MiB).
	MaxInitBody int
	// MaxBodiesInFlight bounds the bytes of request bodies being read and
	// decoded at once, over all sessions; a POST that would pass it gets
	// 503 with Retry-After (default 256 MiB).
	MaxBodiesInFlight int
	// MaxUninitialized bounds the 2024-11-05 HTTP+SSE streams open before
	// their initialize (they do not count against MaxSessions until it
	// succeeds); a GET past it gets 503 (default 16). InitTimeout ends such
	// a stream when no initialize succeeded in it (default 30 s).
	MaxUninitialized int
	InitTimeout      time.Duration
	// MaxSessionHeld bounds the bytes of SSE events one session holds (its
	// open streams' unsent events and what it keeps for resumption);
	// MaxHeld those of all sessions. Past either, once the session has
	// dropped what it held only for resumption, a response becomes a
	// -32603 error naming the cap and a notification is dropped (defaults
	// 64 MiB and 1 GiB).
	MaxSessionHeld int
	MaxHeld        int
	// MaxSessionOffload bounds the bytes of the execution streams past the
	// inline limit that one session keeps on disk for download; MaxOffload
	// those of all sessions. Past either, the stream fails and so does its
	// call, with -32603 (defaults 1 GiB and 4 GiB). The files live in a
	// directory of the session under Stdio.StreamDir (default: the temporary directory), removed with it.
	MaxSessionOffload int64
	MaxOffload        int64
	// MaxClientBodies bounds the bytes of request bodies one client has in
	// flight (spec §11.6 says who a client is): read, decoded, or waiting
	// for their answers; past it a POST gets 503 with Retry-After. A body
	// counts until its requests are answered, not only while it is read
	// (default and floor: MaxBody).
	MaxClientBodies int
	// PublicURL is the endpoint's URL as clients reach it (scheme, host,
	// port and path), when that is not the listener's own address: behind a
	// reverse proxy, or a name in DNS. Download links name it; without it
	// they name the address of the listener the client connected to, never
	// a request's Host header. Its host is also allowed in Host headers.
	PublicURL string
	// HostNames are further host names the front answers to in Host
	// headers, besides its listener's address and PublicURL's host (spec
	// §9): mcp-flow-server passes its certificate's DNS names. They never
	// enter download links.
	HostNames []string
	// ClientKey names the client a request comes from, for the per-client
	// budgets of the 2026-07-28 era (spec §11.6): requests with the same key
	// share one MCP-Flow session, one offload budget, one held-bytes budget
	// and one bodies budget. Default: the remote IP address (clients behind
	// one NAT or proxy share them). With Auth the key is the verified
	// token's subject (and, with PassToken, its scopes), joined with
	// ClientKey's answer when ClientKey is set too: no holder serves two
	// subjects.
	ClientKey func(*http.Request) string
	// DownloadLifetime bounds how long an offloaded stream stays
	// downloadable (and on disk) after its result was sent; a complete
	// download (a GET without Range that received every byte) removes it at
	// once (default 10 minutes).
	DownloadLifetime time.Duration
	// WriteTimeout bounds one write of an answer or an SSE event to a
	// client that does not read: past it the response ends; a 2026-07-28
	// request still running is cancelled ($/cancel), a 2025 stream's events
	// stay held for resumption within MaxSessionHeld (default 30 s).
	WriteTimeout time.Duration
	// Observe, if set, receives a flow.EventHTTPRequest for each request
	// the front answers (its HTTP method, era and status; package metrics
	// counts them), on the request's goroutine once the status is written
	// (an SSE stream counts when it starts). It must not block. The
	// front's MCP-Flow sessions report theirs through Stdio.Client.Hooks.
	Observe func(flow.Event)
}

// CheckPublicURL parses an endpoint URL for HTTPConfig.PublicURL: absolute,
// http or https, with a host and without user information, query or
// fragment.
func CheckPublicURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("%q: want an absolute http or https URL with a host and without user, query or fragment", s)
	}
	return u, nil
}

// Defaults of HTTPConfig (spec §8.3, §10).
const (
	DefaultDownloadLifetime = 10 * time.Minute
	DefaultWriteTimeout     = 30 * time.Second
)
