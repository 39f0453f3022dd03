package bearer

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// metadataSuffix is the well-known URI suffix of protected resource
// metadata (RFC 9728 §3).
const metadataSuffix = "/.well-known/oauth-protected-resource"

// MetadataURL returns the URL of the protected resource metadata of
// resource (RFC 9728 §3.1): the well-known suffix inserted between the host
// and the path, so https://h:p/mcp-flow has
// https://h:p/.well-known/oauth-protected-resource/mcp-flow. A resource that
// is not an absolute URL has none: "".
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	s := u.Scheme + "://" + u.Host + metadataSuffix + strings.TrimSuffix(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		s += "?" + u.RawQuery
	}
	return s
}

// MetadataPath is the path MetadataURL(resource) is served at, for a mux.
func MetadataPath(resource string) string {
	u, err := url.Parse(MetadataURL(resource))
	if err != nil {
		return metadataSuffix
	}
	return u.Path
}

// MetadataHandler serves the protected resource metadata (RFC 9728 §2,
// §3.2) of resource, through the go-sdk's
// auth.ProtectedResourceMetadataHandler: the resource, the authorization
// servers (issuers) that issue tokens for it, the scopes it knows, and
// bearer_methods_supported ["header"]. The access_token query parameter
// that Config.AllowQuery accepts is not advertised: it is a fallback for
// browser WebTransport engines that send no headers (docs/spec.md §9.1),
// which RFC 6750 §2.3 and OAuth 2.1 discourage, and no client should pick it
// from metadata.
func MetadataHandler(resource string, issuers, scopes []string) http.Handler {
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               resource,
		AuthorizationServers:   issuers,
		ScopesSupported:        scopes,
		BearerMethodsSupported: []string{"header"},
	})
}
