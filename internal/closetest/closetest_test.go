// Package closetest checks the end of an MCP-Flow session in every
// WebTransport engine (docs/spec.md §7.2, issue 28): after a clean drain,
// whoever sent $/shutdown, the peer's `transport.closed` resolves with
// closeCode 0 in Chromium, Firefox and Deno. The peer is peer.js: a bare
// WebTransport written from the guide (the server's close is what it sees),
// and the js/ transport's dist (which closes the session itself).
package closetest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// result is what peer.js reports.
type result struct {
	Error            string
	Fin              string
	ShutdownReceived bool
	Ms               int
	Closed           struct {
		State string
		Value *struct {
			CloseCode *int
			Reason    string
		}
		Error  string
		Name   string
		Source string
	}
	UserAgent string
}

func (r result) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// ends are the ends of a session each engine must read as clean: who sends
// $/shutdown (the peer, or the server by Server.Shutdown as on SIGTERM),
// and whose close the peer sees (bare: the server's; js: its own, through
// the js/ transport).
//
// In "bare/server" the page finishes the control stream after the server's
// and waits for the server's close, which comes Limits.PeerFINWait after that FIN
// (spec §7.2 rule 4). Deno sends no FIN on a WebTransport stream (its
// writer.close() is a no-op in Deno 2.9), so the server cannot tell that
// it is done, and that end waits for the drain deadline: Deno runs
// "bare/server-closes" instead, the guide's receiver that closes the
// session itself.
type end struct{ mode, who, extra string }

var (
	serverCloses   = end{"bare", "server", ""}
	receiverCloses = end{"bare", "server", "&close=1"}
	browserEnds    = []end{{"bare", "client", ""}, serverCloses, receiverCloses, {"js", "client", ""}, {"js", "server", ""}}
	denoEnds       = []end{{"bare", "client", ""}, receiverCloses, {"js", "client", ""}, {"js", "server", ""}}
)

func (e end) String() string {
	if e.extra != "" {
		return e.mode + "/" + e.who + "-closes"
	}
	return e.mode + "/" + e.who
}

// server starts a server whose test method closetest/shutdown starts
// Server.Shutdown (as SIGTERM does in mcp-flow-server), and checks that the
// shutdown drained cleanly.
func server(t *testing.T) *flow.Server {
	mux, caps := flowtest.ToolsMux(t, demotools.Config{Root: t.TempDir()})
	var srv *flow.Server
	var once sync.Once
	shut := make(chan error, 1)
	started := make(chan struct{})
	mux["closetest/shutdown"] = flow.HandlerFunc(func(context.Context, *flow.Request) (any, error) {
		once.Do(func() {
			close(started)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				shut <- srv.Shutdown(ctx)
			}()
		})
		return map[string]any{}, nil
	})
	srv = flowtest.Serve(t, flow.ServerConfig{Handler: mux, Capabilities: caps})
	// Registered after Serve's cleanup, so run before it: a clean drain
	// makes Server.Shutdown return nil (spec §7.2).
	t.Cleanup(func() {
		select {
		case <-started:
		default:
			return
		}
		if err := <-shut; err != nil {
			t.Errorf("Server.Shutdown: %v", err)
		}
	})
	return srv
}

// pages serves the repository's root (peer.js, page.html, js/dist) on
// loopback for the test.
func pages(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &http.Server{Handler: http.FileServer(http.Dir("../.."))}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return "http://" + ln.Addr().String()
}

func query(srv *flow.Server, e end, dist string) string {
	return fmt.Sprintf("url=%s&hash=%s&mode=%s&who=%s&dist=%s&wait=3000%s",
		url.QueryEscape(srv.URL()), flowtest.Cert.HashHex(), e.mode, e.who, url.QueryEscape(dist), e.extra)
}

// check asserts the one thing: `closed` resolved with closeCode 0.
func check(t *testing.T, r result) {
	t.Helper()
	t.Logf("%s", r)
	if r.Error != "" {
		t.Fatalf("the peer failed: %s", r.Error)
	}
	if r.Closed.State != "resolved" || r.Closed.Value == nil || r.Closed.Value.CloseCode == nil || *r.Closed.Value.CloseCode != 0 {
		t.Errorf("transport.closed %s (%s %s); want it resolved with closeCode 0", r.Closed.State, r.Closed.Name, r.Closed.Error)
	}
}

const timeout = 30 * time.Second

func distReady(t *testing.T) {
	if _, err := os.Stat("../../js/dist/index.js"); err != nil {
		browsertest.Need(t, "the js/ transport's dist (npm run build:package in js/)", err)
	}
}

func TestCloseChromium(t *testing.T) {
	chromium := browsertest.Chromium(t)
	browsertest.NPM(t, "../../js", "node_modules/playwright-core")
	distReady(t)
	origin := pages(t)
	for _, e := range browserEnds {
		t.Run(e.String(), func(t *testing.T) {
			var r result
			browsertest.Drive(t, "../../js", "test/run.mjs", chromium, origin+"/internal/closetest/page.html?"+query(server(t), e, origin+"/js/dist/index.js"), timeout, &r)
			check(t, r)
		})
	}
}

func TestCloseFirefox(t *testing.T) {
	firefox := browsertest.Firefox(t)
	browsertest.NPM(t, "../../js", "node_modules/puppeteer-core")
	distReady(t)
	origin := pages(t)
	for _, e := range browserEnds {
		t.Run(e.String(), func(t *testing.T) {
			var r result
			browsertest.DriveFirefox(t, "../../js", "test/firefox.mjs", firefox, origin+"/internal/closetest/page.html?"+query(server(t), e, origin+"/js/dist/index.js"), timeout, &r)
			check(t, r)
		})
	}
}

func TestCloseDeno(t *testing.T) {
	deno := browsertest.Deno(t)
	distReady(t)
	dist, err := filepath.Abs("../../js/dist")
	if err != nil {
		t.Fatal(err)
	}
	here, _ := filepath.Abs(".")
	for _, e := range denoEnds {
		t.Run(e.String(), func(t *testing.T) {
			var r result
			browsertest.DriveDeno(t, ".", deno, []string{"--allow-read=" + here + "," + dist}, "deno.mjs", timeout,
				&r, query(server(t), e, "file://"+filepath.Join(dist, "index.js")))
			check(t, r)
		})
	}
}
