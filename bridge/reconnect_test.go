package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// The rig of the reconnection tests (front_stdio_reconnect_test.go,
// front_http_restart_test.go): an mcp-flow-server process killed and started
// again on its address, a host speaking NDJSON on pipes, the bridge binary.

// The bridges under test take a server as lost after liveness without a
// packet from it (flow.Limits.PeerIdleTimeout, -peer-idle-timeout), with
// keep-alives often enough that a loaded machine's stall does not end a live
// session; a request in flight when the server dies must fail well within
// lostBound.
const (
	liveness  = 2 * time.Second
	keepAlive = 200 * time.Millisecond
	// lostBound bounds how long a lost server takes to be noticed (a
	// request in flight fails after liveness: 2.0-2.2 s measured under
	// -race with the 2-core machine at load 10, 2026-12-06), and a request
	// during an outage (ReconnectWait plus 1-2 ms measured): a front that
	// did not take liveness as its idle timeout would wait the default 8 s
	// (flow.DefaultPeerIdleTimeout).
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

// runLineHost runs b between pipes and returns the host side; the test's
// cleanup ends the host's input and waits for Run, failing the test on its
// error.
func runLineHost(t *testing.T, b *bridge.Stdio, logs func() string) *lineHost {
	t.Helper()
	hostIn, bridgeIn := io.Pipe()
	bridgeOut, hostOut := io.Pipe()
	ran := make(chan error, 1)
	go func() { ran <- b.Run(context.Background(), hostIn, hostOut); hostOut.Close() }()
	t.Cleanup(func() {
		bridgeIn.Close()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})
	return newLineHost(t, bridgeIn, bridgeOut, logs)
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
	took := time.Since(t0)
	h.t.Logf("the request in flight failed after %v", took)
	if took > lostBound {
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
