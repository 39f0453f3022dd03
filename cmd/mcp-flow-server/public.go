package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/mcp-flow/mcp-flow/bridge"
)

// publicURLs is -public-url: the URLs (or origins) clients reach this server at, when
// those are not its -addr (behind a forwarder, a load balancer on port
// 443, a DNS name; spec §9, §10.1). The first names the endpoint in the
// HTTP front's download links; every one's host is allowed in Host headers
// on both listeners (TCP and plain HTTP/3 on UDP, through the front), and
// every one's origin is an allowed Origin on both (a page of the server's
// own origin is no cross-site page).
type publicURLs []*url.URL

// parsePublicURLs reads -public-url's comma-separated list; each URL is an
// absolute http(s) URL with a host (bridge.CheckPublicURL).
func parsePublicURLs(s string) (publicURLs, error) {
	var us publicURLs
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		u, err := bridge.CheckPublicURL(f)
		if err != nil {
			return nil, fmt.Errorf("-public-url: %w", err)
		}
		us = append(us, u)
	}
	return us, nil
}

// endpoint is the URL download links name: the first public URL, with
// path (-path) when it gives an origin only; "" for the listener's own
// address.
func (us publicURLs) endpoint(path string) string {
	if len(us) == 0 {
		return ""
	}
	u := *us[0]
	if u.Path == "" || u.Path == "/" {
		u.Path, u.RawPath = path, ""
	}
	return u.String()
}

// hosts are the host names the URLs give, for the Host check.
func (us publicURLs) hosts() []string {
	var hs []string
	for _, u := range us {
		hs = append(hs, u.Hostname())
	}
	return hs
}

// origins are the URLs' origins (scheme://host[:port], as a browser writes
// Origin), for the Origin check.
func (us publicURLs) origins() []string {
	var os []string
	for _, u := range us {
		os = append(os, u.Scheme+"://"+u.Host)
	}
	return os
}
