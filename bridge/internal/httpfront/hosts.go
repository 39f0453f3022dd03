package httpfront

import (
	"net"
	"net/http"
	"strconv"

	"github.com/mcp-flow/mcp-flow/internal/hostcheck"
)

// Who the HTTP front is, and who its clients are (spec §9, §11.6): the
// names it answers to come from its configuration and its listener, never
// from a request.

// localAddr is the address of the listener a request arrived on (nil when
// the server does not say: a handler called directly).
func localAddr(r *http.Request) *net.TCPAddr {
	a, _ := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	return a
}

// hostRefused checks a request's Host header on every listener (spec §9,
// hostcheck.Refused): PublicURL's host name and HostNames are allowed
// besides the listener's own names. It returns why not, "" when allowed.
func (h *HTTPFront) hostRefused(r *http.Request) string {
	names := h.cfg.HostNames
	if h.public != nil {
		names = append([]string{h.public.Hostname()}, names...)
	}
	return hostcheck.Refused(r, names...)
}

// hostRefusal is the body of the 403 a refused Host gets: which host, why,
// and the setting that allows it, for the person who reads the client's
// error (the CLI prints it).
func hostRefusal(why string) string {
	return "host not allowed: " + why + "; a server reached at another host or port (through a proxy, a forwarder or a load balancer) must be told the URL its clients use: -public-url (HTTPConfig.PublicURL)"
}

// originRefusal is the body of the 403 a refused Origin gets (spec §9).
func originRefusal(origin string) string {
	return "origin not allowed: " + strconv.Quote(origin) + " is not a page of this machine, and not among the allowed origins: -allow-origin (HTTPConfig.AllowedOrigins)"
}

// endpointURL is the URL download links are made from: PublicURL, else the
// address of the listener the request arrived on with the endpoint's path.
// A request's Host header never enters it.
func (h *HTTPFront) endpointURL(r *http.Request) string {
	if h.public != nil {
		return h.public.String()
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := "127.0.0.1"
	if la := localAddr(r); la != nil {
		host = la.String()
	}
	return scheme + "://" + host + r.URL.EscapedPath()
}

// clientKey names the client of a 2026-07-28 request (spec §11.6): with
// authentication its token's subject (authKeyPart), joined with
// HTTPConfig.ClientKey's answer when that is set; else ClientKey's answer,
// else the remote IP address.
func (h *HTTPFront) clientKey(r *http.Request) string {
	if a := h.authKeyPart(r); a != "" {
		if h.cfg.ClientKey != nil {
			return a + "\x00key:" + h.cfg.ClientKey(r)
		}
		return a
	}
	if h.cfg.ClientKey != nil {
		return "key:" + h.cfg.ClientKey(r)
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "ip:" + host
}
