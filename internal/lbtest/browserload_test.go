package lbtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
)

// browserCallers is the browser kind of the fleet's callers: a page in
// headless Chromium (testdata/callers.html, driven by testdata/callers.cjs)
// holding one MCP-Flow session per client through the balancer, its
// workers calling the tally tool. A Go caller's call hands its key to the
// page (the workers of its client's session long-poll /next?s=N on the
// test's HTTP server) and waits for the page's outcome (/done), so that
// the page's calls are counted by the tracker like every other kind's.
// A session that drains or ends is opened again by the page. When
// Chromium's network service crashes (a bug of Chromium 156's: a
// minidump each time, SIGTRAP in its WebTransport client's connect state
// machine when a connection closes between its handshake and the answer
// to its CONNECT, as a server's last Close does; docs/deploy.md "The test:
// make lb"), every session of the page
// goes at once: crashed counts the calls then in flight in doubt, and the
// driver's report (pageStats) says why each QUIC connection closed.
type browserCallers struct {
	queues []chan string // by session: keys for the page's workers
	stop   chan struct{} // closed at the end: /next answers 204
	mu     sync.Mutex
	wait   map[string]chan browserOutcome // key → its caller
	driver *proc
	stats  chan string // the driver's last line: the page's counters
	last   string      // that line, once the driver has exited (end)
	web    *http.Server

	crashMu sync.Mutex
	crashes []time.Time // when Chromium said its network service crashed
}

// crashLine is how Chromium's browser process says on stderr that its
// network service crashed (content/browser/network_service_instance_impl.cc:
// "Network service crashed, restarting service."); DEBUG=pw:browser makes
// Playwright copy the browser's stderr to the driver's.
const crashLine = "Network service crashed"

// crashWindow: a browser call lost this close to a crash of Chromium's
// network service is counted as lost with it (crashed). The page's
// outcome and the browser's stderr line each come through the driver
// (measured: the line reached the test 0.26 s after Chromium wrote it, and
// the page's lost calls had been sent 0.3 to 1.3 s before, under load);
// ten times that, either way.
const crashWindow = 10 * time.Second

// browserOutcome is what the page posts to /done for a key.
type browserOutcome struct {
	Key, Text, Verdict, Why, Err string
}

// startBrowserCallers serves the page and starts the driver: sessions
// sessions of per workers each, to lbURL (the certificate's hash).
func startBrowserCallers(t *testing.T, lbURL, hash string, sessions, per int) *browserCallers {
	t.Helper()
	kit := newPageKit(t, "callers.html")
	b := &browserCallers{stop: make(chan struct{}), wait: map[string]chan browserOutcome{}, stats: make(chan string, 1)}
	for range sessions {
		b.queues = append(b.queues, make(chan string))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(kit.page)
	})
	mux.HandleFunc("GET /next", func(w http.ResponseWriter, r *http.Request) {
		var s int
		if _, err := fmt.Sscan(r.URL.Query().Get("s"), &s); err != nil || s < 0 || s >= len(b.queues) {
			http.Error(w, "no such session", http.StatusBadRequest)
			return
		}
		select {
		case key := <-b.queues[s]:
			io.WriteString(w, key)
		case <-b.stop:
			w.WriteHeader(http.StatusNoContent)
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("POST /done", func(w http.ResponseWriter, r *http.Request) {
		var o browserOutcome
		if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		ch := b.wait[o.Key]
		delete(b.wait, o.Key)
		b.mu.Unlock()
		if ch != nil {
			ch <- o
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.web = &http.Server{Handler: mux}
	go b.web.Serve(ln)
	t.Cleanup(func() { b.web.Close() })
	pageURL := fmt.Sprintf("http://%s/?url=%s&hash=%s&sessions=%d&per=%d", ln.Addr(), url.QueryEscape(lbURL), hash, sessions, per)
	cmd := kit.driver(t, "callers.cjs", pageURL, fmt.Sprint(startBound.Milliseconds()))
	// Chromium's net log, always: the driver's last line says from it why
	// each QUIC connection closed (pageStats), which "Connection lost"
	// does not. Kept with MCP_FLOW_LB_LOGDIR.
	netlog := filepath.Join(t.TempDir(), "chromium-netlog.json")
	if dir := os.Getenv(logDirEnv); dir != "" {
		netlog = filepath.Join(dir, fmt.Sprintf("chromium-netlog-%02d.json", logSeq.Add(1)))
	}
	cmd.Env = append(cmd.Env, "NETLOG="+netlog, "DEBUG=pw:browser")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	b.driver = start(t, "browser callers", cmd, func(line string) {
		if strings.Contains(line, crashLine) {
			b.crashMu.Lock()
			b.crashes = append(b.crashes, time.Now())
			b.crashMu.Unlock()
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		var last string
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- "ready"
				continue
			}
			last = sc.Text()
		}
		io.Copy(io.Discard, stdout)
		b.stats <- last
		close(ready)
	}()
	select {
	case l := <-ready:
		if l != "ready" {
			t.Fatalf("the browser callers' page did not start: %s; stderr:\n%s", <-b.stats, tail(b.driver.stderr.String()))
		}
	case <-time.After(startBound):
		t.Fatalf("the browser callers' page did not start in %v; stderr:\n%s", startBound, tail(b.driver.stderr.String()))
	}
	return b
}

// pageStats is the driver's last line (testdata/callers.cjs): the page's
// counters and what Chromium's net log says of its QUIC connections.
type pageStats struct {
	Opened, FailedOpens int
	QUIC                struct {
		Reasons     map[string]int // QUIC_SESSION_CLOSED's details, counted
		OtherCloses []struct {     // the first closes other than the page's own and a drain's
			AtMs, SilentMs, LongestGapMs int64
			Why                          string
		}
		StallMs int64 // the longest time no connection received a packet while one was open
		Error   string
	}
}

// diagnosis says, from the driver's last line, why the page's connections
// closed other than by its own close or a drain's, and whether all of
// them went without a packet at once for half the idle timeout or more
// (Chromium's network service, or nginx, did not run).
func diagnosis(line string) string {
	var st pageStats
	if err := json.Unmarshal([]byte(line), &st); err != nil {
		return "the driver's last line is not its counters: " + line
	}
	if st.QUIC.Error != "" {
		return st.QUIC.Error
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Chromium's QUIC connections closed by %v; the longest time no connection received anything: %v", st.QUIC.Reasons, time.Duration(st.QUIC.StallMs)*time.Millisecond)
	if stall := time.Duration(st.QUIC.StallMs) * time.Millisecond; stall >= flow.DefaultPeerIdleTimeout/2 {
		b.WriteString(" (every connection at once: Chromium, or nginx, did not run; a dead server or path silences its own connections only)")
	}
	for _, c := range st.QUIC.OtherCloses {
		fmt.Fprintf(&b, "\n\t%v after Chromium's start: %s, after %v without a packet (its longest gap %v)", time.Duration(c.AtMs)*time.Millisecond, c.Why,
			time.Duration(c.SilentMs)*time.Millisecond, time.Duration(c.LongestGapMs)*time.Millisecond)
	}
	return b.String()
}

// crashed counts the calls of kind lost in a crash of Chromium's network
// service as in doubt, not lost: the crash takes every connection of the
// page with it, and a call in flight then may have run, as one on a killed
// server may (the tally says whether it did; it is never retried). They
// are the calls lost with "session lost" (Chromium's "Connection lost")
// within crashWindow of a crash. Chromium's crash, not the fleet's: it is
// logged, never hidden.
func (b *browserCallers) crashed(t *testing.T, tr *tracker, kind string) {
	b.crashMu.Lock()
	crashes := slices.Clone(b.crashes)
	b.crashMu.Unlock()
	moved := 0
	tr.update(func() {
		k := tr.kind(kind)
		for key, l := range tr.lostAt {
			if tr.keys[key] != kind || !strings.HasPrefix(l.class, "session lost") || !slices.ContainsFunc(crashes, func(c time.Time) bool {
				return l.at.Sub(c).Abs() <= crashWindow
			}) {
				continue
			}
			delete(tr.lostAt, key)
			k.lost--
			if k.lostWhy[l.class]--; k.lostWhy[l.class] == 0 {
				delete(k.lostWhy, l.class)
			}
			k.lostErrs = slices.DeleteFunc(k.lostErrs, func(e string) bool { return strings.HasPrefix(e, key+" ") })
			k.inDoubt++
			k.doubtWhy["Chromium's network service crashed"]++
			tr.doubt[key] = kind
			moved++
		}
	})
	if len(crashes) > 0 {
		t.Logf("Chromium's network service crashed %d times (at %v; its stderr: %q), taking the page's connections: %d calls then in flight are in doubt, not lost",
			len(crashes), crashes, crashLine, moved)
	}
}

// client is the client of the page's session s.
func (b *browserCallers) client(s int) client { return &browserClient{b: b, s: s} }

// end stops the page's workers (every /next answers 204 from now on), and
// waits for the driver to print the page's counters (b.last) and exit.
func (b *browserCallers) end() error {
	close(b.stop)
	select {
	case <-b.driver.exited:
	case <-time.After(exitBound):
		return fmt.Errorf("the browser callers' driver has not exited %v after the stop; stderr:\n%s", exitBound, tail(b.driver.stderr.String()))
	}
	if b.driver.err != nil {
		return fmt.Errorf("the browser callers' driver: %v; stderr:\n%s", b.driver.err, tail(b.driver.stderr.String()))
	}
	b.last = <-b.stats
	return nil
}

// report logs the driver's last line (end), and when kind lost calls, why
// the page's QUIC connections ended (diagnosis).
func (b *browserCallers) report(t *testing.T, tr *tracker, kind string) {
	t.Logf("the browser callers' page (sessions opened, failed opens, Chromium, its QUIC connections' ends from its net log): %s", b.last)
	var lost int
	tr.update(func() { lost = tr.kind(kind).lost })
	if lost > 0 && b.last != "" {
		t.Logf("why the page's sessions ended: %s", diagnosis(b.last))
	}
}

// browserClient is one session of the page, shared by its callers.
type browserClient struct {
	b *browserCallers
	s int
}

func (c *browserClient) call(ctx context.Context, key string) (string, verdict, string, error) {
	ch := make(chan browserOutcome, 1)
	c.b.mu.Lock()
	c.b.wait[key] = ch
	c.b.mu.Unlock()
	defer func() { c.b.mu.Lock(); delete(c.b.wait, key); c.b.mu.Unlock() }()
	select {
	case c.b.queues[c.s] <- key:
	case <-ctx.Done():
		return "", didNotRun, "not handed to the page", ctx.Err()
	}
	select {
	case o := <-ch:
		switch {
		case o.Verdict == "":
			return o.Text, didNotRun, "", nil
		case o.Verdict == "didNotRun":
			return "", didNotRun, o.Why, errors.New(o.Why + ": " + o.Err)
		default:
			return "", mayHaveRun, o.Why, errors.New(o.Why + ": " + o.Err)
		}
	case <-ctx.Done():
		return "", mayHaveRun, "no outcome from the page", ctx.Err()
	}
}

// close: the page's sessions end with the page (browserCallers.end).
func (c *browserClient) close() error { return nil }
