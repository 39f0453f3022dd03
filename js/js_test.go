// Package js holds the npm package @mcp-flow/webtransport (src/index.js,
// index.d.ts) and its test: the real MCP SDK clients, v2 and v1, over the
// package's WebTransportClientTransport in headless Chromium, against the
// test tools on an MCP-Flow server.
package js

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/testtools"
)

type sdkRun struct {
	Version, Encoding string
	ServerTransport   flow.ServerTransport
	Tools             []string
	Echo              string
	Generate          struct {
		Link             string
		Bytes            int64
		SHA256, Reported string
		Ms               int
	}
	Inline struct {
		Bytes            int64
		SHA256, Reported string
	}
	Progress struct {
		Updates   [][2]float64
		Datagrams int
	}
	Cancel struct {
		Error *string
		Ms    int
	}
	Sampling string
	Sent     []string
	Stats    map[string]float64
	Closed   bool
}

func TestSDKClientsOverMCPFlow(t *testing.T) {
	chromium := browsertest.Chromium(t)
	browsertest.NPM(t, ".", "node_modules/@modelcontextprotocol/client")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pageOrigin := "http://" + ln.Addr().String()
	pages := &http.Server{Handler: http.FileServer(http.Dir("."))}
	go pages.Serve(ln)
	t.Cleanup(func() { pages.Close() })

	// The test tools, with each tools/call's end recorded: the cancel
	// step must stop the server's handler ($/cancel), not only the SDK.
	mux, caps := flowtest.ToolsMux(t, testtools.Config{Root: t.TempDir()})
	var mu sync.Mutex
	var cancelled []string
	tools := mux["tools/call"]
	mux["tools/call"] = flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		res, err := tools.HandleRequest(ctx, req)
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			mu.Lock()
			cancelled = append(cancelled, cause.Error())
			mu.Unlock()
		}
		return res, err
	})
	// No AllowedOrigins: a page on loopback may use a loopback server (spec §9).
	srv := flowtest.Serve(t, flow.ServerConfig{Handler: mux, Capabilities: caps})

	const size, size1 = 64 << 20, 12 << 20
	pageURL := fmt.Sprintf("%s/test/index.html?url=%s&hash=%s&size=%d&size1=%d&only=%s&debug=%s", pageOrigin, url.QueryEscape(srv.URL()), flowtest.Cert.HashHex(), size, size1, os.Getenv("MCP_FLOW_JS_ONLY"), os.Getenv("MCP_FLOW_JS_DEBUG"))
	var res struct {
		Error     string
		Trail     []string
		V2, V1    sdkRun
		BadHash   struct{ Error *string }
		Console   []string
		UserAgent string
	}
	browsertest.Drive(t, ".", "test/run.mjs", chromium, pageURL, 90*time.Second, &res)
	if res.Error != "" {
		t.Fatalf("the page failed: %s\nsteps:\n%s\nconsole:\n%s", res.Error, strings.Join(res.Trail, "\n"), strings.Join(res.Console, "\n"))
	}
	t.Logf("browser: %s", res.UserAgent)
	for _, r := range []struct {
		run  sdkRun
		size int64
	}{{res.V2, size}, {res.V1, size1}} {
		s := r.run
		name := "SDK " + s.Version
		if s.Encoding != "cbor" || s.ServerTransport.Type != "mcp-flow" {
			t.Errorf("%s: encoding %q, server transport %+v; want cbor", name, s.Encoding, s.ServerTransport)
		}
		if len(s.Tools) < 6 {
			t.Errorf("%s: tools/list gave %v", name, s.Tools)
		}
		if want := "こんにちは from SDK " + s.Version; s.Echo != want {
			t.Errorf("%s: echo %q, want %q", name, s.Echo, want)
		}
		g := s.Generate
		if g.Bytes != r.size || g.SHA256 != testtools.GenerateSHA256(r.size) || g.Reported != g.SHA256 || !strings.HasPrefix(g.Link, "mcp-flow://stream/") {
			t.Errorf("%s: generate through transport.stream(): %+v, want %d bytes with SHA-256 %s", name, g, r.size, testtools.GenerateSHA256(r.size))
		} else {
			t.Logf("%s: %d MiB through transport.stream() in %d ms", name, g.Bytes>>20, g.Ms)
		}
		if in := s.Inline; in.Bytes != 1000 || in.SHA256 != in.Reported || in.SHA256 != testtools.GenerateSHA256(1000) {
			t.Errorf("%s: inlined blob %+v", name, in)
		}
		p := s.Progress
		if len(p.Updates) == 0 || p.Updates[len(p.Updates)-1] != [2]float64{5, 5} || p.Datagrams == 0 {
			t.Errorf("%s: progress %+v: want updates up to 5 of 5, some by datagram", name, p)
		}
		if s.Cancel.Error == nil || !strings.Contains(*s.Cancel.Error, "the user pressed Stop") && !strings.Contains(*s.Cancel.Error, "Abort") {
			t.Errorf("%s: the aborted call ended with %v", name, s.Cancel.Error)
		}
		if !slices.Contains(s.Sent, "$/cancel") || slices.Contains(s.Sent, "notifications/cancelled") {
			t.Errorf("%s: methods sent %v: the abort must go as $/cancel, not notifications/cancelled", name, s.Sent)
		}
		if want := "the browser answers: what is MCP-Flow?"; !strings.Contains(s.Sampling, want) {
			t.Errorf("%s: ask_sampling gave %q, want the client's handler's %q", name, s.Sampling, want)
		}
		if !s.Closed {
			t.Errorf("%s: onclose not called after client.close()", name)
		}
	}
	mu.Lock()
	if len(cancelled) != 2 || !strings.Contains(strings.Join(cancelled, "|"), "the user pressed Stop") {
		t.Errorf("server handlers cancelled: %q; want both SDKs' aborts as $/cancel with their reason", cancelled)
	}
	mu.Unlock()
	if e := res.BadHash.Error; e == nil || !strings.Contains(*e, "serverCertificateHashes") {
		t.Errorf("a wrong certificate hash: %v; want a failure naming serverCertificateHashes", e)
	}
	// close() ends the session with $/shutdown: the server holds none.
	deadline := time.Now().Add(5 * time.Second)
	for srv.Sessions() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := srv.Sessions(); n != 0 {
		t.Errorf("%d sessions still open after both clients closed", n)
	}
	if t.Failed() {
		b, _ := json.MarshalIndent(res, "", "  ")
		t.Logf("page result:\n%s", b)
	}
}
