package main

import (
	"context"
	"errors"
	"maps"
	"net/http"
	neturl "net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/quic-go/quic-go/http3"
)

// TestPublicURLFlag (issue 40): -public-url's hosts pass the Host check
// of both listeners (TCP, and plain HTTP/3 on UDP), its origins pass the
// Origin check of both (the front's, and the WebTransport CONNECT's), and
// its first URL names the endpoint in download links; any other Host or
// Origin gets a 403 that says which one and which flag allows it. A URL
// that is no absolute http(s) URL is a usage error.
func TestPublicURLFlag(t *testing.T) {
	t.Parallel()
	const first, second = "https://mcp.example.test:8443/mcp-flow", "https://other.example.test"
	url, hash, stderr, srv := runServer(t, buildServer(t), "-public-url", first+","+second)
	tcp := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: flowtest.PinnedTLS(t, hash), ForceAttemptHTTP2: true}}
	defer tcp.CloseIdleConnections()
	h3 := &http3.Transport{TLSClientConfig: flowtest.PinnedTLS(t, hash)}
	defer h3.Close()
	udp := &http.Client{Timeout: 20 * time.Second, Transport: h3}

	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	altSvc := `h3=":` + u.Port() + `"`
	posters := map[string]func(string, map[string]string) (*http.Response, string){
		"TCP": poster(t, tcp, url, 2, altSvc, stderr), "HTTP/3": poster(t, udp, url, 3, altSvc, stderr)}
	version := map[string]string{"MCP-Protocol-Version": "2025-11-25"}
	with := func(h map[string]string) map[string]string {
		m := maps.Clone(version)
		maps.Copy(m, h)
		return m
	}
	for name, post := range posters {
		for _, h := range []map[string]string{
			{"Host": "mcp.example.test:8443"}, {"Host": "other.example.test"},
			{"Origin": "https://mcp.example.test:8443"}, {"Origin": "https://other.example.test"},
		} {
			if r, body := post(initialize, with(h)); r.StatusCode != http.StatusOK {
				t.Errorf("%s, %v: %d %.300s; want 200", name, h, r.StatusCode, body)
			}
		}
		for _, c2 := range []struct {
			hdr  map[string]string
			want string
		}{
			{map[string]string{"Host": "evil.example.test"}, `host not allowed: Host "evil.example.test"`},
			{map[string]string{"Origin": "https://evil.example.test"}, `origin not allowed: "https://evil.example.test"`},
		} {
			r, body := post(initialize, with(c2.hdr))
			flag := "-public-url"
			if _, ok := c2.hdr["Origin"]; ok {
				flag = "-allow-origin"
			}
			if r.StatusCode != http.StatusForbidden || !strings.Contains(body, c2.want) || !strings.Contains(body, flag) {
				t.Errorf("%s, %v: %d %q; want 403 with %q and %s", name, c2.hdr, r.StatusCode, body, c2.want, flag)
			}
		}
	}

	// The first URL names the endpoint in download links (a result past
	// the front's 8 MiB inline limit).
	post := posters["TCP"]
	r, _ := post(initialize, version)
	session := with(map[string]string{"Mcp-Session-Id": r.Header.Get("Mcp-Session-Id")})
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	if r, body := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"generate","arguments":{"bytes":9437184}}}`, session); r.StatusCode != http.StatusOK || !strings.Contains(body, `"uri":"`+first+`?download=`) {
		t.Errorf("generate 9 MiB: %d %.500s; want a resource_link to %s?download=…", r.StatusCode, body, first)
	}

	// The WebTransport CONNECT: the public origins pass, others get 403.
	dial := func(origin string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		s, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: flowtest.PinnedTLS(t, hash), Header: http.Header{"Origin": {origin}}})
		if err == nil {
			s.Close()
		}
		return err
	}
	if err := dial("https://other.example.test"); err != nil {
		t.Errorf("CONNECT from the origin of -public-url: %v", err)
	}
	var re *flow.RefusedError
	if err := dial("https://evil.example.test"); !errors.As(err, &re) || re.Status != http.StatusForbidden {
		t.Errorf("CONNECT from another origin: %v; want a 403 *flow.RefusedError", err)
	}

	// A drain removes the download the link names (nothing is left in
	// TMPDIR).
	select {
	case err := <-srv.signal(syscall.SIGTERM):
		if err != nil {
			t.Errorf("server exit after SIGTERM: %v; stderr:\n%s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("server still running 20 s after SIGTERM; stderr:\n%s", stderr)
	}
	if code := run([]string{"-addr", "127.0.0.1:0", "-cert-dir", t.TempDir(), "-public-url", "ftp://mcp.example.test/"}); code != 2 {
		t.Errorf("-public-url ftp://…: exit %d, want 2", code)
	}
}
