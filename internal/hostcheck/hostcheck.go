// Package hostcheck holds the one Host-header rule of MCP-Flow's HTTP
// listeners, the Streamable HTTP front and the inspector of mcp-flow ui
// (DNS rebinding; docs/spec.md §9): a listener answers only to names it
// owns, which come from its configuration and its own address, never from
// a request.
package hostcheck

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// Refused reports why r's Host header names no host the listener owns, or
// "" when it names one. Allowed are names (host names from configuration,
// such as a public URL's; any port), the IP address of the listener the
// request arrived on (http.LocalAddrContextKey), and, when that address is
// a loopback one, the loopback names: localhost, 127.0.0.0/8 and ::1. A
// port, when given with one of the latter, must be the listener's. A
// request without a listener address (a handler called directly, as tests
// do) has nothing to be compared with and is allowed.
func Refused(r *http.Request, names ...string) string {
	host, port := r.Host, ""
	if h, p, err := net.SplitHostPort(host); err == nil {
		host, port = h, p
	}
	host = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ".")
	if host == "" {
		return "no Host header"
	}
	for _, n := range names {
		if n != "" && strings.EqualFold(host, strings.TrimSuffix(n, ".")) {
			return ""
		}
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return ""
	}
	lap, err := netip.ParseAddrPort(local.String())
	if err != nil {
		return "the listener's address " + strconv.Quote(local.String()) + " is not an IP address and port"
	}
	laddr := lap.Addr().Unmap().WithZone("")
	if port != "" && port != strconv.Itoa(int(lap.Port())) {
		return "Host " + strconv.Quote(r.Host) + " names another port than the listener's"
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a = a.Unmap().WithZone(""); a == laddr || (laddr.IsLoopback() && a.IsLoopback()) {
			return ""
		}
	} else if laddr.IsLoopback() && strings.EqualFold(host, "localhost") {
		return ""
	}
	if laddr.IsLoopback() {
		return "Host " + strconv.Quote(r.Host) + " is none of the listener's address, loopback names and configured names"
	}
	return "Host " + strconv.Quote(r.Host) + " is neither the listener's address nor a configured name"
}
