package hostcheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRefused: the rule on a loopback listener, a non-loopback one, with a
// configured name, and without a listener address.
func TestRefused(t *testing.T) {
	at := func(host, local string, names ...string) string {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		if local != "" {
			a, _ := net.ResolveTCPAddr("tcp", local)
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, a))
		}
		return Refused(r, names...)
	}
	for _, c := range []struct {
		host, local string
		names       []string
		ok          bool
	}{
		{"127.0.0.1:8080", "127.0.0.1:8080", nil, true},
		{"localhost", "127.0.0.1:8080", nil, true},
		{"LOCALHOST:8080", "127.0.0.1:8080", nil, true},
		{"127.0.0.2:8080", "127.0.0.1:8080", nil, true},
		{"[::1]:8080", "127.0.0.1:8080", nil, true},
		{"127.0.0.1:9999", "127.0.0.1:8080", nil, false},
		{"evil.example", "127.0.0.1:8080", nil, false},
		{"evil.example:8080", "127.0.0.1:8080", nil, false},
		{"localhost.evil.example", "127.0.0.1:8080", nil, false},
		{"", "127.0.0.1:8080", nil, false},
		{"192.0.2.7:8080", "192.0.2.7:8080", nil, true},
		{"192.0.2.7", "192.0.2.7:8080", nil, true},
		{"localhost:8080", "192.0.2.7:8080", nil, false},
		{"127.0.0.1:8080", "192.0.2.7:8080", nil, false},
		{"192.0.2.7:9", "192.0.2.7:8080", nil, false},
		{"mcp.example.com", "192.0.2.7:8080", []string{"mcp.example.com"}, true},
		{"MCP.example.com.:443", "192.0.2.7:8080", []string{"mcp.example.com"}, true},
		{"other.example.com", "192.0.2.7:8080", []string{"mcp.example.com"}, false},
		{"anything.example", "", nil, true},
		{"", "", nil, false},
	} {
		if why := at(c.host, c.local, c.names...); (why == "") != c.ok {
			t.Errorf("Host %q on %s (names %v): %q, want allowed=%v", c.host, c.local, c.names, why, c.ok)
		}
	}
}
