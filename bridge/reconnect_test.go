package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// The bridges under test take a server as lost after liveness without a
// packet from it (flow.Limits.PeerIdleTimeout, -peer-idle-timeout), with
// keep-alives often enough that a loaded machine's stall does not end a live
// session; a request in flight when the server dies must fail well within
// lostBound.
const (
	liveness  = 2 * time.Second
	keepAlive = 200 * time.Millisecond
	lostBound = 5 * time.Second
)

// serverProc is an mcp-flow-server subprocess that can be killed and
// started again on the same address with the same certificate.
type serverProc struct {
	t              *testing.T
	bin, certDir   string
	addr, url      string
	hash           string
	cmd            *exec.Cmd
	stderr         *flowtest.SyncBuffer
	exited         chan struct{}
	exitErr        error
	previousStderr string
}

func buildServer(t *testing.T) string {
	return buildBinary(t, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server")
}

// startServer starts the server on a free UDP port; restart uses the same.
func startServer(t *testing.T, bin string) *serverProc {
	p := &serverProc{t: t, bin: bin, certDir: t.TempDir(), addr: "127.0.0.1:0"}
	p.start()
	t.Cleanup(p.kill)
	return p
}

func (p *serverProc) start() {
	t := p.t
	t.Helper()
	if p.stderr != nil {
		p.previousStderr += p.stderr.String()
	}
	p.cmd = exec.Command(p.bin, "-addr", p.addr, "-cert-dir", p.certDir, "-root", p.certDir, "-drain", "5s")
	p.stderr = &flowtest.SyncBuffer{}
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func() { p.exitErr = p.cmd.Wait(); close(p.exited) }()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var u, hash string
	deadline := time.After(30 * time.Second)
	for u == "" || hash == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the server ended before printing its url and hash; stderr:\n%s", p.stderr)
			}
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "url":
				u = v
			case "cert-sha256":
				hash = v
			}
		case <-deadline:
			t.Fatalf("the server printed no url and hash in 30 s; stderr:\n%s", p.stderr)
		}
	}
	go func() {
		for range lines {
		}
	}()
	if p.url != "" && (u != p.url || hash != p.hash) {
		t.Fatalf("restarted server at %s (cert %s), want %s (cert %s)", u, hash, p.url, p.hash)
	}
	p.url, p.hash = u, hash
	pu, _ := url.Parse(u)
	p.addr = pu.Host
}

// kill ends the server with SIGKILL: it sends nothing, not even a close.
func (p *serverProc) kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// term ends the server with SIGTERM (a graceful shutdown) and requires a
// clean exit.
func (p *serverProc) term() {
	p.t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.t.Fatalf("the server did not exit after SIGTERM; stderr:\n%s", p.stderr)
	}
	if p.exitErr != nil {
		p.t.Fatalf("graceful shutdown: %v; stderr:\n%s", p.exitErr, p.stderr)
	}
}

func (p *serverProc) logs() string { return p.previousStderr + p.stderr.String() }

// lineHost is an MCP host on the NDJSON side of a stdio front.
type lineHost struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan string
	logs  func() string // the bridge's stderr, for failure messages
}

func newLineHost(t *testing.T, in io.WriteCloser, out io.Reader, logs func() string) *lineHost {
	h := &lineHost{t: t, in: in, lines: make(chan string, 64), logs: logs}
	go func() {
		defer close(h.lines)
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			h.lines <- strings.TrimSuffix(line, "\n")
		}
	}()
	return h
}

func (h *lineHost) send(msg string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, msg+"\n"); err != nil {
		h.t.Fatalf("write to the bridge: %v; its stderr:\n%s", err, h.logs())
	}
}

type hostMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// next returns the next message the bridge writes, within d.
func (h *lineHost) next(d time.Duration) (hostMsg, string) {
	h.t.Helper()
	select {
	case line, ok := <-h.lines:
		if !ok {
			h.t.Fatalf("the bridge's stdout ended; its stderr:\n%s", h.logs())
		}
		var m hostMsg
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			h.t.Fatalf("stdout line %q: %v", line, err)
		}
		return m, line
	case <-time.After(d):
		h.t.Fatalf("no message from the bridge in %v; its stderr:\n%s", d, h.logs())
	}
	panic("unreachable")
}

// response returns the response with id, skipping notifications.
func (h *lineHost) response(id string, d time.Duration) (hostMsg, string) {
	h.t.Helper()
	deadline := time.Now().Add(d)
	for {
		m, line := h.next(time.Until(deadline))
		if m.Method != "" {
			continue
		}
		if string(m.ID) != id {
			h.t.Fatalf("response %s, want id %s", line, id)
		}
		return m, line
	}
}

// ok sends a request and requires a successful answer within d.
func (h *lineHost) ok(id, method, params string, d time.Duration) string {
	h.t.Helper()
	h.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	m, line := h.response(id, d)
	if m.Error != nil || m.Result == nil {
		h.t.Fatalf("%s: %s; the bridge's stderr:\n%s", method, line, h.logs())
	}
	return line
}

func (h *lineHost) initialize() {
	h.t.Helper()
	h.ok("0", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}`, 30*time.Second)
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// startSlow sends a long tools/call with a progress token and returns once
// its first progress notification arrived: the request is in flight at the
// server.
func (h *lineHost) startSlow(id string) {
	h.t.Helper()
	h.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"slow","arguments":{"steps":1000,"delayMs":100},"_meta":{"progressToken":"p` + id + `"}}}`)
	if m, line := h.next(30 * time.Second); m.Method != "notifications/progress" {
		h.t.Fatalf("want progress first, got %s; stderr:\n%s", line, h.logs())
	}
}

// lost requires the answer to request id to be the error for a lost server,
// within lostBound.
func (h *lineHost) lost(id, serverURL string, t0 time.Time) {
	h.t.Helper()
	m, line := h.response(id, lostBound)
	if took := time.Since(t0); took > lostBound {
		h.t.Fatalf("the request in flight failed after %v, want under %v", took, lostBound)
	}
	if m.Error == nil || m.Error.Code != -32603 || !strings.Contains(m.Error.Message, serverURL) || !strings.Contains(m.Error.Message, "lost") {
		h.t.Fatalf("answer to the request in flight: %s; want -32603 naming %s", line, serverURL)
	}
}

// bridgeProc is the bridge binary run as a host runs it.
type bridgeProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    io.Reader
	stderr *flowtest.SyncBuffer
	exited chan struct{} // closed once it has exited; then err is set
	err    error
}

func startBridge(t *testing.T, cli string, args ...string) *bridgeProc {
	t.Helper()
	p := &bridgeProc{cmd: exec.Command(cli, args...), stderr: &flowtest.SyncBuffer{}, exited: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	p.in, _ = p.cmd.StdinPipe()
	p.out, _ = p.cmd.StdoutPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// TestStdioFrontReconnects: the real bridge binary, driven as a host drives
// it, survives its server being killed and restarted (and shut down
// gracefully and restarted): the request in flight fails at once with an
// error naming the server, and the host's next request succeeds without
// restarting the bridge; the bridge logs what state was lost.
func TestStdioFrontReconnects(t *testing.T) {
	cli, srvBin := buildCLI(t), buildServer(t)
	srv := startServer(t, srvBin)
	b := startBridge(t, cli, "-url", srv.url, "-cert-hash", srv.hash, "-peer-idle-timeout", liveness.String(), "-keep-alive", keepAlive.String(), "-reconnect-wait", "30s", "bridge", "stdio")
	stderr := b.stderr
	h := newLineHost(t, b.in, b.out, func() string { return stderr.String() + "\n--- server:\n" + srv.logs() })
	h.initialize()
	h.ok("1", "tools/call", `{"name":"echo","arguments":{"text":"before"}}`, 30*time.Second)

	// kill -9 with a request in flight.
	h.startSlow("2")
	t0 := time.Now()
	srv.kill()
	h.lost("2", srv.url, t0)
	t.Logf("request in flight failed %v after SIGKILL", time.Since(t0))
	t1 := time.Now()
	srv.start()
	if line := h.ok("3", "tools/call", `{"name":"echo","arguments":{"text":"after the restart"}}`, 40*time.Second); !strings.Contains(line, "after the restart") {
		t.Fatalf("echo after the restart: %s", line)
	}
	t.Logf("first request after the restart answered %v after the server started", time.Since(t1))
	h.ok("4", "ping", `{}`, 10*time.Second)

	// A graceful restart: $/shutdown, the session ends, the bridge
	// reconnects.
	srv.term()
	srv.start()
	h.ok("5", "tools/call", `{"name":"echo","arguments":{"text":"after SIGTERM"}}`, 40*time.Second)

	logs := stderr.String()
	for _, want := range []string{"MCP-Flow session lost", "resource subscriptions", "logging/setLevel", "reconnecting to the MCP-Flow server", "reconnected", srv.url} {
		if !strings.Contains(logs, want) {
			t.Errorf("the bridge's log lacks %q:\n%s", want, logs)
		}
	}
	b.in.Close()
	select {
	case <-b.exited:
		if b.err != nil {
			t.Fatalf("bridge exit after EOF: %v; stderr:\n%s", b.err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the bridge did not exit after EOF; stderr:\n%s", stderr)
	}
}

// TestStdioFrontExitOnDisconnect: with -exit-on-disconnect the bridge
// answers the request in flight and exits with status 3 when its server is
// killed, instead of reconnecting.
func TestStdioFrontExitOnDisconnect(t *testing.T) {
	cli, srvBin := buildCLI(t), buildServer(t)
	srv := startServer(t, srvBin)
	b := startBridge(t, cli, "-url", srv.url, "-cert-hash", srv.hash, "-peer-idle-timeout", liveness.String(), "-keep-alive", keepAlive.String(), "bridge", "stdio", "-exit-on-disconnect")
	stderr := b.stderr
	h := newLineHost(t, b.in, b.out, stderr.String)
	h.initialize()
	h.startSlow("1")
	t0 := time.Now()
	srv.kill()
	h.lost("1", srv.url, t0)
	select {
	case <-b.exited:
		var ee *exec.ExitError
		if !errors.As(b.err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("exit: %v, want status 3; stderr:\n%s", b.err, stderr)
		}
	case <-time.After(lostBound):
		t.Fatalf("the bridge did not exit within %v of losing its server; stderr:\n%s", lostBound, stderr)
	}
	t.Logf("exited %v after SIGKILL", time.Since(t0))
	if logs := stderr.String(); !strings.Contains(logs, srv.url) || strings.Contains(logs, "reconnecting") {
		t.Fatalf("stderr should name the lost server and not reconnect:\n%s", logs)
	}
}

// TestStdioFrontReconnectLeaksNothing: across kills and restarts of the
// server, the goroutines of each lost session end (in process, so that
// they can be counted), and EOF ends the rest.
func TestStdioFrontReconnectLeaksNothing(t *testing.T) {
	srv := startServer(t, buildServer(t))
	hash, _ := certs.ParseHash(srv.hash)
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{hash}})
	quiet := flowtest.Quiet
	b := bridge.NewStdio(bridge.StdioConfig{URL: srv.url, Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: quiet, Limits: flow.Limits{PeerIdleTimeout: liveness, KeepAlivePeriod: keepAlive}},
		Logger: quiet, ReconnectWait: 30 * time.Second})
	before := runtime.NumGoroutine()
	hostIn, bridgeIn := io.Pipe()
	bridgeOut, hostOut := io.Pipe()
	ran := make(chan error, 1)
	go func() { ran <- b.Run(context.Background(), hostIn, hostOut); hostOut.Close() }()
	h := newLineHost(t, bridgeIn, bridgeOut, srv.logs)
	h.initialize()
	h.ok("1", "ping", `{}`, 10*time.Second)
	// The count with the first reconnected session is the baseline: each
	// later cycle must end every goroutine of the session it lost (a leak
	// of one goroutine per cycle fails this).
	settled := runtime.NumGoroutine()
	for i := range 4 {
		h.startSlow("10")
		t0 := time.Now()
		srv.kill()
		h.lost("10", srv.url, t0)
		srv.start()
		h.ok("11", "tools/call", `{"name":"echo","arguments":{"text":"again"}}`, 40*time.Second)
		n := waitGoroutines(settled)
		t.Logf("cycle %d: %d goroutines, baseline %d", i, n, settled)
		if i == 0 {
			settled = n
			continue
		}
		if n > settled {
			buf := make([]byte, 1<<20)
			t.Fatalf("cycle %d: %d goroutines, %d after the first reconnection:\n%s", i, n, settled, buf[:runtime.Stack(buf, true)])
		}
	}
	bridgeIn.Close()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if n := waitGoroutines(before); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after EOF, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// waitGoroutines waits up to 10 s for at most n goroutines, and returns the
// count.
func waitGoroutines(n int) int {
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		got := runtime.NumGoroutine()
		if got <= n || time.Now().After(deadline) {
			return got
		}
		<-tick.C
	}
}

// sse reads the JSON-RPC messages of an SSE body as they come.
func sseMessages(body io.Reader) <-chan hostMsg {
	ch := make(chan hostMsg, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m hostMsg
				if json.Unmarshal([]byte(data), &m) == nil {
					ch <- m
				}
			}
		}
	}()
	return ch
}

// TestHTTPFrontAfterServerRestart: when the server behind the HTTP front is
// killed, a POST in flight gets its error at once on its SSE stream, the
// session's GET stream ends, and the session id gets 404 from then on; the
// client's new initialize reaches the restarted server. A graceful restart
// likewise.
func TestHTTPFrontAfterServerRestart(t *testing.T) {
	srv := startServer(t, buildServer(t))
	hash, _ := certs.ParseHash(srv.hash)
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{hash}})
	quiet := flowtest.Quiet
	front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.url,
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: quiet, Limits: flow.Limits{PeerIdleTimeout: liveness, KeepAlivePeriod: keepAlive}}, Logger: quiet}})
	ts := httptest.NewServer(front)
	t.Cleanup(ts.Close) // after the streams' bodies are closed (cleanups run last first)
	initialize := func() string {
		t.Helper()
		r, body := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
		id := r.Header.Get("MCP-Session-Id")
		if r.StatusCode != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d %s; server stderr:\n%s", r.StatusCode, body, srv.logs())
		}
		send(t, ts.URL, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"MCP-Session-Id": id})
		return id
	}
	echo := func(sid string) int {
		r, body := send(t, ts.URL, "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, map[string]string{"MCP-Session-Id": sid})
		if r.StatusCode == http.StatusOK && !strings.Contains(body, `"text":"hi"`) {
			t.Fatalf("echo: %s", body)
		}
		return r.StatusCode
	}
	open := func(method, sid, body string) *http.Response {
		req, _ := http.NewRequest(method, ts.URL, strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("MCP-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", method, resp, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	sid := initialize()
	if c := echo(sid); c != http.StatusOK {
		t.Fatalf("echo: %d", c)
	}
	get := sseMessages(open("GET", sid, "").Body)
	post := sseMessages(open("POST", sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"steps":1000,"delayMs":100},"_meta":{"progressToken":"t"}}}`).Body)
	if m := <-post; m.Method != "notifications/progress" {
		t.Fatalf("want progress first, got %+v", m)
	}
	t0 := time.Now()
	srv.kill()
	timeout := time.After(lostBound)
	for answered, getEnded := false, false; !answered || !getEnded; {
		select {
		case m, ok := <-post:
			if !ok {
				if !answered {
					t.Fatal("the POST stream ended without an answer")
				}
				post = nil
				continue
			}
			if m.Method != "" {
				continue
			}
			if m.Error == nil || m.Error.Code != -32603 || !strings.Contains(m.Error.Message, srv.url) {
				t.Fatalf("answer to the POST in flight: %+v", m)
			}
			answered = true
		case _, ok := <-get:
			if !ok {
				getEnded = true
				get = nil
			}
		case <-timeout:
			t.Fatalf("%v after SIGKILL: answer %v, GET stream ended %v", lostBound, answered, getEnded)
		}
	}
	t.Logf("POST in flight answered and GET stream ended %v after SIGKILL", time.Since(t0))
	if c := echo(sid); c != http.StatusNotFound {
		t.Fatalf("the session whose server session ended answered %d, want 404", c)
	}
	srv.start()
	sid2 := initialize()
	if c := echo(sid2); c != http.StatusOK {
		t.Fatalf("echo on the new session: %d", c)
	}

	// Graceful: SIGTERM ends the session too, and its GET stream.
	get = sseMessages(open("GET", sid2, "").Body)
	srv.term()
	for range get {
	}
	srv.start()
	if c := echo(sid2); c != http.StatusNotFound {
		t.Fatalf("the session whose server shut down answered %d, want 404", c)
	}
	sid3 := initialize()
	if c := echo(sid3); c != http.StatusOK {
		t.Fatalf("echo after the graceful restart: %d", c)
	}
	if r, _ := send(t, ts.URL, "DELETE", "", map[string]string{"MCP-Session-Id": sid3}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", r.StatusCode)
	}
}

// recordHandler is a slog.Handler that hands each record's message and
// attributes to a channel; if only is set, only records with that message.
type recordHandler struct {
	ch   chan map[string]string
	only string
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h recordHandler) WithGroup(string) slog.Handler            { return h }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	if h.only != "" && r.Message != h.only {
		return nil
	}
	m := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	select {
	case h.ch <- m:
	default: // the test reads what it waits for; the rest may go
	}
	return nil
}

// TestStdioFrontReconnectWait: while the server is down, attempts follow
// the backoff (ReconnectMin doubling to ReconnectMax), each logged; a host
// request waits ReconnectWait for a new session and then fails with an
// error naming the server; once the server is back, the host's requests
// succeed.
func TestStdioFrontReconnectWait(t *testing.T) {
	srv := startServer(t, buildServer(t))
	hash, _ := certs.ParseHash(srv.hash)
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{hash}})
	records := make(chan map[string]string, 256)
	log := slog.New(recordHandler{ch: records})
	const wait = 500 * time.Millisecond
	b := bridge.NewStdio(bridge.StdioConfig{URL: srv.url, Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet,
		Limits: flow.Limits{PeerIdleTimeout: liveness, KeepAlivePeriod: keepAlive}}, Logger: log, ReconnectWait: wait, ReconnectMin: 50 * time.Millisecond, ReconnectMax: 100 * time.Millisecond})
	hostIn, bridgeIn := io.Pipe()
	bridgeOut, hostOut := io.Pipe()
	ran := make(chan error, 1)
	go func() { ran <- b.Run(context.Background(), hostIn, hostOut); hostOut.Close() }()
	defer func() {
		bridgeIn.Close()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	h := newLineHost(t, bridgeIn, bridgeOut, srv.logs)
	h.initialize()
	h.startSlow("1")
	t0 := time.Now()
	srv.kill()
	h.lost("1", srv.url, t0)
	// Wait for a record, skipping others.
	await := func(msg string, attempt int) map[string]string {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case r := <-records:
				if r["msg"] == msg && (attempt == 0 || r["attempt"] == strconv.Itoa(attempt)) {
					return r
				}
			case <-timeout:
				t.Fatalf("no log %q (attempt %d) in 30 s", msg, attempt)
			}
		}
	}
	// A request while the server is down waits ReconnectWait, then fails.
	t1 := time.Now()
	h.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	m, line := h.response("2", 10*time.Second)
	if took := time.Since(t1); took < wait || took > lostBound {
		t.Fatalf("the request during the outage failed after %v, want %v to %v", took, wait, lostBound)
	}
	if m.Error == nil || m.Error.Code != -32603 || !strings.Contains(m.Error.Message, srv.url) || !strings.Contains(m.Error.Message, "no new session within "+wait.String()) {
		t.Fatalf("answer during the outage: %s", line)
	}
	// A request the host cancels while it waits gets no answer (MCP): the
	// next answer is the following request's.
	h.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"host gave up"}}`)
	h.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if m, line := h.response("5", 10*time.Second); m.Error == nil {
		t.Fatalf("ping during the outage: %s", line)
	}
	// The backoff: 100 ms after the first failure, then capped at 100 ms.
	for attempt, next := range []string{"100ms", "100ms"} {
		if r := await("reconnection failed", attempt+1); r["next"] != next || r["server"] != srv.url {
			t.Fatalf("attempt %d logged %v, want next=%s and the server", attempt+1, r, next)
		}
	}
	srv.start()
	await("reconnected to the MCP-Flow server; the host's initialize was sent again", 0)
	h.ok("3", "tools/call", `{"name":"echo","arguments":{"text":"back"}}`, 10*time.Second)
}
