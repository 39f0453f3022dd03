// Package browser holds the browser peer: an MCP-Flow client written in
// JavaScript from the guide, independently of the Go code, and the test that
// runs it in headless Chromium against the server.
package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/testtools"
)

type step struct {
	Name                 string
	InitializeFrameBytes int
	Transport            flow.ServerTransport
	Tools                []string
	Text                 string
	RequestID            uint32
	Ref                  flow.StreamRef
	Header               []byte
	Bytes                int64
	SHA256, Reported     string
	Updates              []struct {
		Via             string
		Channel         int
		RequestID       uint32
		Progress, Total float64
	}
	Error  *struct{ Code int64 }
	Result json.RawMessage
	Closed bool
}

func TestBrowserPeer(t *testing.T) {
	chromium := browsertest.Chromium(t)
	browsertest.NPM(t, ".", "node_modules/protobufjs") // the last dependency added: an older install lacks it

	// The page, served over plain HTTP on 127.0.0.1 (a secure context).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pageOrigin := "http://" + ln.Addr().String()
	pages := &http.Server{Handler: http.FileServer(http.Dir("."))}
	go pages.Serve(ln)
	t.Cleanup(func() { pages.Close() })
	srv := flowtest.Serve(t, flow.ServerConfig{AllowedOrigins: []string{pageOrigin}})
	cert := flowtest.Cert

	const size = 3 << 20
	pageURL := fmt.Sprintf("%s/index.html?url=%s&hash=%s&enc=cbor,json&size=%d", pageOrigin, url.QueryEscape(srv.URL()), cert.HashHex(), size)
	var res struct {
		Error     string
		Steps     []step
		Console   []string
		UserAgent string
	}
	browsertest.Drive(t, ".", "run.mjs", chromium, pageURL, 90*time.Second, &res)
	if res.Error != "" {
		t.Fatalf("the page failed: %s\nconsole: %s", res.Error, strings.Join(res.Console, "\n"))
	}
	t.Logf("browser: %s", res.UserAgent)
	steps := map[string]step{}
	for _, s := range res.Steps {
		steps[s.Name] = s
	}
	verdicts := map[string]string{}
	check := func(name string, ok bool, format string, args ...any) {
		t.Helper()
		if _, seen := verdicts[name]; !seen {
			verdicts[name] = "pass"
		}
		if !ok {
			verdicts[name] = "fail: " + fmt.Sprintf(format, args...)
			t.Errorf("%s: "+format, append([]any{name}, args...)...)
		}
	}
	// The interop matrix (make interop) reads the verdicts from here.
	if path := os.Getenv("MCP_FLOW_INTEROP_OUT"); path != "" {
		defer func() {
			b, _ := json.Marshal(map[string]any{"userAgent": res.UserAgent, "verdicts": verdicts})
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Error(err)
			}
		}()
	}
	in := steps["initialize"]
	check("initialize", in.Transport.Encoding == "cbor" && in.Transport.Type == "mcp-flow", "transport %+v", in.Transport)
	check("initialize", in.InitializeFrameBytes > 0, "no initialize frame")
	check("tools/list", len(steps["tools/list"].Tools) >= 5, "tools %v", steps["tools/list"].Tools)
	check("echo", steps["echo"].Text == "こんにちは from the browser", "text %q", steps["echo"].Text)
	g := steps["generate"]
	wantHdr := []byte{byte(g.RequestID >> 24), byte(g.RequestID >> 16), byte(g.RequestID >> 8), byte(g.RequestID), 0, 0, 0, byte(g.Ref.StreamTag)}
	check("generate", g.Ref.Type == "ref/stream" && g.Ref.StreamTag == 1, "ref %+v", g.Ref)
	check("generate", bytes.Equal(g.Header, wantHdr), "stream header % x, want % x", g.Header, wantHdr)
	check("generate", g.Bytes == size && g.SHA256 == testtools.GenerateSHA256(size) && g.Reported == g.SHA256,
		"%d bytes, sha256 %s (server reported %s)", g.Bytes, g.SHA256, g.Reported)
	p := steps["progress"]
	datagrams := 0
	for _, u := range p.Updates {
		if u.Via == "datagram" && u.Channel == 1 && u.RequestID == p.RequestID {
			datagrams++
		}
	}
	check("progress", datagrams > 0, "no progress datagram among %+v", p.Updates)
	c := steps["cancel"]
	check("cancel", c.Error != nil && c.Error.Code == -32800, "cancel answered %+v", c.Error)
	check("ping", string(steps["ping"].Result) == "{}", "ping result %s", steps["ping"].Result)
	check("shutdown", steps["shutdown"].Closed, "session not closed after $/shutdown")
	if t.Failed() {
		b, _ := json.Marshal(res.Steps)
		t.Logf("page steps: %s\nconsole: %s", b, strings.Join(res.Console, "\n"))
	}
}
