package bridge

import (
	"net"
	"net/http"
	"strconv"
	"strings"
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

// hostRefused checks a request's Host header (DNS rebinding, spec §9) on
// every listener: allowed are PublicURL's host name, the IP address of the
// listener the request arrived on, and on a loopback listener the loopback
// names (localhost, 127.0.0.0/8, ::1); a port, when given with an address,
// must be the listener's. It returns why not, "" when allowed.
func (h *HTTPFront) hostRefused(r *http.Request) string {
	host, port := r.Host, ""
	if hp, p, err := net.SplitHostPort(r.Host); err == nil {
		host, port = hp, p
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return "no Host header"
	}
	if h.public != nil && strings.EqualFold(host, h.public.Hostname()) {
		return ""
	}
	la := localAddr(r)
	if la == nil {
		return "" // no listener to compare with (not served by net/http)
	}
	if port != "" && port != strconv.Itoa(la.Port) {
		return "port " + port + " is not the listener's"
	}
	ip := net.ParseIP(host)
	switch {
	case ip != nil && ip.Equal(la.IP):
		return ""
	case la.IP.IsLoopback() && (strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback())):
		return ""
	}
	if la.IP.IsLoopback() {
		return "the front answers to its listener's address, loopback names and -public-url's host only"
	}
	return "the front answers to its listener's address and -public-url's host only"
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

// clientKey names the client of a 2026-07-28 request (spec §11.6):
// HTTPConfig.ClientKey's answer, else the remote IP address.
func (h *HTTPFront) clientKey(r *http.Request) string {
	if h.cfg.ClientKey != nil {
		return "key:" + h.cfg.ClientKey(r)
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "ip:" + host
}
