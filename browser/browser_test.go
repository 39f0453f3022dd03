// Package browser holds the browser peer: an MCP-Flow client written in
// JavaScript from the guide, independently of the Go code, and the test that
// runs it in headless Chromium against the server.
package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/testtools"
)

// need fails the test under CI=true and skips it elsewhere, saying what is
// missing.
func need(t *testing.T, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("skipping: %s: %v", what, err)
}

// ensureChromium installs Debian's chromium when it is missing.
func ensureChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Log("chromium is missing: installing Debian's chromium with apt-get")
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "chromium"}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			need(t, "installing chromium (apt-get "+strings.Join(args, " ")+")", fmt.Errorf("%v\n%s", err, tail(out)))
		}
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		need(t, "chromium after apt-get install", err)
	}
	return p
}

// ensureBundle installs the npm packages at the versions of package-lock.json
// and builds the page. (npm install, not npm ci: npm 11's ci refuses a lock
// file made on one platform for packages with per-platform optional
// dependencies; install scripts are not needed: cbor-x runs in pure JS.)
func ensureBundle(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		need(t, "npm", err)
	}
	if _, err := os.Stat("node_modules/playwright-core"); err != nil {
		run(t, "npm", "install", "--no-audit", "--no-fund", "--ignore-scripts")
	}
	run(t, "npm", "run", "build")
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		need(t, name+" "+strings.Join(args, " "), fmt.Errorf("%v\n%s", err, tail(out)))
	}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

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
	chromium := ensureChromium(t)
	ensureBundle(t)

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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "run.mjs", pageURL, "90000")
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("browser run failed: %v\n%s", err, tail(stderr.Bytes()))
	}
	var res struct {
		Error     string
		Steps     []step
		Console   []string
		UserAgent string
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("browser output: %v\n%s", err, out)
	}
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
		t.Logf("page steps: %s\nconsole: %s", out, strings.Join(res.Console, "\n"))
	}
}
