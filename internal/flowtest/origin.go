package flowtest

import (
	"net"
	neturl "net/url"
	"testing"

	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
)

// Behind puts a lossrelay.Origin in front of the server at url (both its
// UDP and its TCP listener: mcp-flow-server's one origin, spec §10.1), its
// UDP through up and down (lossrelay.Blocked: no QUIC gets through), and
// returns the URL through it. The Origin listens on 127.0.0.2 at the
// server's port, so that the server's Host check (spec §9) takes it as its
// own loopback listener. The relays close at the end of the test.
func Behind(t testing.TB, url string, up, down lossrelay.Path) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	o, err := OriginAt(t, url, net.JoinHostPort("127.0.0.2", u.Port()), up, down)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = o.Addr()
	return u.String()
}

// OriginAt puts a lossrelay.Origin listening at addr in front of the
// server at url, as Behind does, and returns it; an error if addr cannot
// be bound. It closes at the end of the test. A server reached at another
// port than its own refuses Streamable HTTP unless told that URL
// (-public-url, spec §9).
func OriginAt(t testing.TB, url, addr string, up, down lossrelay.Path) (*lossrelay.Origin, error) {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	ua, err := net.ResolveUDPAddr("udp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	o, err := lossrelay.NewOrigin(addr, ua, u.Host, up, down)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { o.Close() })
	return o, nil
}
