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
	"sync"
	"testing"
	"time"
)

// browserCallers is the browser kind of the fleet's callers: a page in
// headless Chromium (testdata/callers.html, driven by testdata/callers.cjs)
// holding one MCP-Flow session per client through the balancer, its
// workers calling the tally tool. A Go caller's call hands its key to the
// page (the workers of its client's session long-poll /next?s=N on the
// test's HTTP server) and waits for the page's outcome (/done), so that
// the page's calls are counted by the tracker like every other kind's.
type browserCallers struct {
	queues []chan string // by session: keys for the page's workers
	stop   chan struct{} // closed at the end: /next answers 204
	mu     sync.Mutex
	wait   map[string]chan browserOutcome // key → its caller
	driver *proc
	stats  chan string // the driver's last line: the page's counters
	web    *http.Server
}

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
	if dir := os.Getenv(logDirEnv); dir != "" {
		cmd.Env = append(cmd.Env, "NETLOG="+filepath.Join(dir, fmt.Sprintf("chromium-netlog-%02d.json", logSeq.Add(1))))
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	b.driver = start(t, "browser callers", cmd, nil)
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

// client is the client of the page's session s.
func (b *browserCallers) client(s int) client { return &browserClient{b: b, s: s} }

// end stops the page's workers (every /next answers 204 from now on), and
// waits for the driver to print the page's counters and exit.
func (b *browserCallers) end() (string, error) {
	close(b.stop)
	select {
	case <-b.driver.exited:
	case <-time.After(exitBound):
		return "", fmt.Errorf("the browser callers' driver has not exited %v after the stop; stderr:\n%s", exitBound, tail(b.driver.stderr.String()))
	}
	if b.driver.err != nil {
		return "", fmt.Errorf("the browser callers' driver: %v; stderr:\n%s", b.driver.err, tail(b.driver.stderr.String()))
	}
	return <-b.stats, nil
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
