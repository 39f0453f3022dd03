package lbtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// noticeBound is the hang guard of one round: the driver's start, the
// page's session, the takeover and the end (measured: 8.5 s without a key,
// the idle timeout, 0.6 s with one, on the 2-core machine).
const noticeBound = 2 * time.Minute

// noticeResult is what testdata/notice.html leaves in window.__result.
type noticeResult struct {
	MS       int64  `json:"ms"`
	Closed   string `json:"closed"`
	Info     string `json:"info"`
	Answered string `json:"answered"`
	Error    string `json:"error"`
	Console  []string
	Agent    string `json:"userAgent"`
}

// TestBrowserTimeToNotice (make lb): the browser kind of "Fleet"'s time to
// notice. A page in headless Chromium holds an MCP-Flow session with a
// server of a cidRig, through nginx (raw WebTransport and the control
// stream, testdata/notice.html); that server is killed (SIGKILL) and
// another takes its address, server ID and key, if any; the page
// then sends a ping and times the session's end. With a shared fleet key
// the new server answers the ping's packet with a stateless reset that
// Chromium's QUIC stack accepts: the session closes in about a round trip.
// Without, Chromium learns only from its idle timeout. A page has no API
// to probe on its own (as flow's watchWaiting does): a page that only
// waits learns at its next send or its idle timeout. Checked: with the key
// the session ends (it is not answered) in under half the idle timeout;
// without, it is not answered either and ends at the idle timeout or
// later. Chromium says "Connection lost" either way, so the time tells the
// reset from the timeout: a behaviour's bound, 500 times the 8 ms
// measured, not a speed asserted. Rounds of each are logged side by side.
func TestBrowserTimeToNotice(t *testing.T) {
	if os.Getenv("MCP_FLOW_LB") != "1" {
		t.Skip("a measurement of make lb (MCP_FLOW_LB=1): it drives headless Chromium")
	}
	kit := newPageKit(t, "notice.html")
	page := kit.page
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})}
	go web.Serve(ln)
	t.Cleanup(func() { web.Close() })

	const rounds = 3
	times := map[string][]time.Duration{}
	for _, c := range []struct {
		name     string
		fleetKey bool
	}{{"shared key", true}, {"no key", false}} {
		// The servers' UDP sockets are held across the kill, as a
		// deployment's should be (docs/deploy.md, "Keeping the address
		// open"): a packet of Chromium's that meets the killed server's
		// closed port makes nginx drop the flow's answers for good, the
		// replacement's reset with them (round 1 of a run, 6.4 s, without).
		rig := startCIDRig(t, rigOptions{fleetKey: c.fleetKey, holdUDP: true})
		pageURL := fmt.Sprintf("http://%s/?url=%s&hash=%s", ln.Addr(), url.QueryEscape("https://"+rig.lbAddr+flow.DefaultPath), rig.hash)
		for i := range rounds {
			r := noticeRound(t, kit, pageURL, func() {
				// The page's session is the only one open: the
				// busiest server holds it.
				victim, n := rig.busiest(t)
				if n != 1 {
					t.Fatalf("the busiest server holds %d sessions, want the page's alone", n)
				}
				rig.servers[victim].kill()
				rig.replace(t, victim)
			})
			took := time.Duration(r.MS) * time.Millisecond
			t.Logf("%s, round %d: the page's session %s %v after its ping: %s%s (%s)", c.name, i+1, r.Closed, took, r.Info, r.Answered, r.Agent)
			if r.Answered != "" || r.Closed == "" {
				t.Fatalf("%s: the ping to the new server was answered or the session did not end: %+v", c.name, r)
			}
			idle := flow.DefaultPeerIdleTimeout
			if c.fleetKey && took >= idle/2 {
				t.Errorf("with a shared key the session ended %v after the ping, not before half the idle timeout (%v): no stateless reset reached it", took, idle)
			}
			if !c.fleetKey && took < idle/2 {
				t.Errorf("without a key the session ended %v after the ping, before half the idle timeout (%v): %s", took, idle, r.Info)
			}
			times[c.name] = append(times[c.name], took)
		}
		rig.ngx.stop(t, syscall.SIGTERM)
	}
	t.Logf("Chromium's time to notice after SIGKILL and takeover, from its next send: shared fleet key %s; no key %s",
		flowtest.Spread(times["shared key"]), flowtest.Spread(times["no key"]))
}

// noticeRound runs the driver on pageURL; once the page holds its session
// it calls takeover, then lets the page send its ping, and returns what
// the page found.
func noticeRound(t *testing.T, kit pageKit, pageURL string, takeover func()) noticeResult {
	t.Helper()
	cmd := kit.driver(t, "notice.cjs", pageURL, fmt.Sprint(noticeBound.Milliseconds()))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, "notice driver", cmd, nil)
	lines := make(chan string, 2)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
	}()
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			if !ok {
				<-p.exited
				t.Fatalf("the driver ended before %s (%v); stderr:\n%s", what, p.err, tail(p.stderr.String()))
			}
			return l
		case <-time.After(noticeBound):
			t.Fatalf("no %s from the driver in %v; stderr:\n%s", what, noticeBound, tail(p.stderr.String()))
		}
		return ""
	}
	if l := next("ready"); l != "ready" {
		t.Fatalf("the page did not hold a session: %s", l)
	}
	takeover()
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	var r noticeResult
	if l := next("the result"); json.Unmarshal([]byte(l), &r) != nil || r.Error != "" {
		t.Fatalf("the page's result: %s", l)
	}
	stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(exitBound):
		t.Fatalf("the driver has not exited %v after its result", exitBound)
	}
	return r
}

// pageKit is what a page driven in headless Chromium needs: Chromium,
// js/ (whose node_modules has playwright-core) and the page (testdata/).
type pageKit struct {
	chromium, jsDir string
	page            []byte
}

// newPageKit installs or finds Chromium and playwright-core, and reads
// testdata/name.
func newPageKit(t *testing.T, name string) pageKit {
	t.Helper()
	k := pageKit{chromium: browsertest.Chromium(t)}
	var err error
	if k.jsDir, err = filepath.Abs("../../js"); err != nil {
		t.Fatal(err)
	}
	browsertest.NPM(t, k.jsDir, "node_modules/playwright-core/package.json")
	if k.page, err = os.ReadFile(filepath.Join("testdata", name)); err != nil {
		t.Fatal(err)
	}
	return k
}

// driver is `node testdata/script args…`, with the kit's Chromium and
// playwright-core.
func (k pageKit) driver(t *testing.T, script string, args ...string) *exec.Cmd {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{path}, args...)...)
	cmd.Env = append(os.Environ(), "CHROMIUM="+k.chromium, "NODE_PATH="+filepath.Join(k.jsDir, "node_modules"))
	return cmd
}
