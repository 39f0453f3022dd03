//go:build linux

// Over 400 lines: the upstream's tests that need Linux (process groups and
// their reaping, stdin and socket stalls with small socket buffers), with
// the child-process rig they share (TestMain, childUpstream).

package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge/internal/upstream"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/gobuild"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"golang.org/x/sys/unix"
)

// childEnv makes the test binary a stdio MCP server (flowtest.UpstreamChild)
// instead of running the tests.
const childEnv = flowtest.UpstreamChildEnv

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		flowtest.UpstreamChild(mode)
		return
	}
	code := m.Run()
	gobuild.Cleanup()
	os.Exit(code)
}

// childUpstream serves the test binary as a stdio upstream in mode.
func childUpstream(t *testing.T, mode string, cfg upstream.StdioUpstreamConfig) (*upstream.Upstream, *flow.Server) {
	return childUpstreamSeeing(t, mode, cfg, nil)
}

// childUpstreamSeeing is childUpstream with seen called as each request
// reaches the server's handler (the session has read past it).
func childUpstreamSeeing(t *testing.T, mode string, cfg upstream.StdioUpstreamConfig, seen func(*flow.Request)) (*upstream.Upstream, *flow.Server) {
	t.Helper()
	t.Setenv(childEnv, mode)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Command = []string{exe}
	if cfg.Stderr == nil {
		cfg.Stderr = &flowtest.SyncBuffer{}
	}
	if cfg.Logger == nil {
		cfg.Logger = flowtest.Quiet
	}
	up := upstream.NewStdioUpstream(cfg)
	scfg := flow.ServerConfig{Logger: flowtest.Quiet}
	up.Configure(&scfg)
	if seen != nil {
		h := scfg.Handler
		scfg.Handler = flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
			seen(req)
			return h.HandleRequest(ctx, req)
		})
	}
	srv := flowtest.Serve(t, scfg)
	t.Cleanup(func() { // nothing is left behind, whatever the test did
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := up.Wait(ctx); err != nil {
			t.Errorf("upstream processes still running 30 s after the server closed: %v", err)
		}
	})
	return up, srv
}

// childPIDs reads the child's and grandchild's pids from its serverInfo.
func childPIDs(t *testing.T, s *flow.Session) (pid, grandchild int) {
	t.Helper()
	v := s.InitializeResult().ServerInfo.Version
	if _, err := fmt.Sscanf(v, "pid=%d,grandchild=%d", &pid, &grandchild); err != nil {
		t.Fatalf("serverInfo.version %q: %v", v, err)
	}
	return pid, grandchild
}

// exits waits up to d for pid, which need not be ours, to exit (on a
// pidfd: no polling); a zombie that is another parent's to reap has exited.
func exits(pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return errors.Is(err, unix.ESRCH)
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(d.Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 1
	}
}

// heldBound is how long a ping or call may take while an HTTP upstream
// holds a POST: a hang's guard, not a speed. The POST is held until the test
// ends, so a session held behind it would never answer; one that is not
// answered within 240 ms under -race on the shared 2-core machine, 584 ms
// with another suite and three builds beside it.
const heldBound = 10 * time.Second

// TestUpstreamProcessStopped: an upstream process that ignores end of input
// and SIGTERM (and whose child does too) is ended once its session ends:
// SIGTERM after one grace period, SIGKILL after another, and reaped; what it
// wrote on stderr after its input ended is still logged (spec §10).
func TestUpstreamProcessStopped(t *testing.T) {
	const grace = 300 * time.Millisecond
	stderr := &flowtest.SyncBuffer{}
	up, srv := childUpstream(t, "stubborn", upstream.StdioUpstreamConfig{StopGrace: grace, Stderr: stderr})
	ctx, s := flowtest.Dial(t, srv)
	pid, grandchild := childPIDs(t, s)
	if r, err := s.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": "ok"}}); err != nil {
		t.Fatalf("echo: %v", err)
	} else if !strings.Contains(string(r.Result), `"ok"`) {
		t.Fatalf("echo: %s", r.Result)
	}
	closed := time.Now()
	s.Close()
	wctx, cancel := context.WithTimeout(ctx, 2*grace+10*time.Second)
	defer cancel()
	if err := up.Wait(wctx); err != nil {
		t.Fatalf("the upstream process (pid %d) is not ended %v after its session: %v; its stderr:\n%s", pid, time.Since(closed), err, stderr.String())
	}
	took := time.Since(closed)
	t.Logf("process ended and reaped %v after the session closed (grace %v)", took, grace)
	// Only SIGKILL ends it, so not before two grace periods.
	if took < 2*grace {
		t.Errorf("ended after %v, under two grace periods (%v): it cannot have been SIGKILL", took, 2*grace)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d after Wait: kill 0 says %v, want ESRCH (not reaped: a zombie)", pid, err)
	}
	if !exits(grandchild, 5*time.Second) {
		t.Errorf("the process's child %d is still running 5 s after the process was reaped", grandchild)
	}
	if want := fmt.Sprintf("child %d: end of input (stubborn)", pid); !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q; it is:\n%s", want, stderr.String())
	}
}

// TestUpstreamProcessExitEvents: Observe gets one EventUpstreamExit per
// EventUpstreamStart, once the process is reaped and before Upstream.Wait
// returns: exit status 0 for a process that ends at end of input, -1 for
// one that only SIGKILL ends.
func TestUpstreamProcessExitEvents(t *testing.T) {
	// The polite child exits on its own at stdin's end: its grace is long,
	// so that a loaded machine never turns its exit 0 into a signal; the
	// stubborn one ignores it and is killed after a short grace.
	for _, tc := range []struct {
		mode  string
		code  int64
		grace time.Duration
	}{{"polite", 0, 30 * time.Second}, {"stubborn", -1, 100 * time.Millisecond}} {
		t.Run(tc.mode, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			up, srv := childUpstream(t, tc.mode, upstream.StdioUpstreamConfig{StopGrace: tc.grace, Observe: func(e flow.Event) {
				mu.Lock()
				got = append(got, fmt.Sprintf("%v %s %d server=%v", e.Kind, e.Outcome, e.Code, e.Server))
				mu.Unlock()
			}})
			ctx, s := flowtest.Dial(t, srv)
			s.Close()
			if err := up.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []string{"upstream-start start 0 server=true", fmt.Sprintf("upstream-exit exit %d server=true", tc.code)}
			if !slices.Equal(got, want) {
				t.Fatalf("events %q, want %q", got, want)
			}
		})
	}
}

// TestUpstreamProcessCap: upstream processes have a cap of their own
// (issue 11: 300 sessions spawned 301 processes). Past it, initialize is
// refused with -32005 and the data names the cap; a slot is free again once
// a process is reaped.
func TestUpstreamProcessCap(t *testing.T) {
	up, srv := childUpstream(t, "polite", upstream.StdioUpstreamConfig{MaxProcesses: 1})
	ctx, first := flowtest.Dial(t, srv)
	_, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeTooManyRequests || !strings.Contains(je.Message, "limit of 1 upstream processes") ||
		string(je.Data) != `{"maxProcesses":1}` {
		t.Fatalf("a second session past a cap of 1 process: %v (%#v), want -32005 naming the cap", err, je)
	}
	first.Close()
	if err := up.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	_, again := flowtest.Dial(t, srv)
	if got := again.InitializeResult().ServerInfo.Name; got != "child-polite" {
		t.Fatalf("after the first process ended, a new session got %q", got)
	}
}

// TestUpstreamStdinStallDoesNotBlockSession: an upstream process that does
// not read its input holds a large request in the bridge's write; the
// session's pings, client notifications (past the queue's 64, so that the
// queue fills and they are dropped: spec §10) and a $/cancel are not held
// behind it (flow.Hooks must not block; spec §10, "Backpressure"). Shown by
// events, not by speed: the upstream stalls until the test has had
// stallRounds pings answered on the session after the large request reached
// the bridge's handler, and only then lets it read again; a session held
// behind the write would answer none of them, and the test would fail at
// stallGuard.
func TestUpstreamStdinStallDoesNotBlockSession(t *testing.T) {
	const stallRounds = 2 * upstream.DefaultUpstreamQueue
	// stallGuard: how long one ping may wait while the upstream stalls, a
	// hang's guard: pings not held took up to 584 ms under -race with
	// another suite and three builds beside it (7-42 ms alone).
	const stallGuard = 10 * time.Second
	bigSeen := make(chan struct{})
	var once sync.Once
	_, srv := childUpstreamSeeing(t, "polite", upstream.StdioUpstreamConfig{}, func(r *flow.Request) {
		if len(r.Params) > 64<<10 {
			once.Do(func() { close(bigSeen) })
		}
	})
	stalling := make(chan struct{}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet,
		Hooks: flow.Hooks{Notification: func(_ *flow.Session, n *jsonrpc.Request) {
			if n.Method == "notifications/message" {
				select {
				case stalling <- struct{}{}:
				default:
				}
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var pid, grandchild int
	if _, err := fmt.Sscanf(s.InitializeResult().ServerInfo.Version, "pid=%d,grandchild=%d", &pid, &grandchild); err != nil {
		t.Fatal(err)
	}
	resume := sync.OnceFunc(func() {
		if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
			t.Errorf("resuming the upstream: %v", err)
		}
	})
	defer resume()
	// Another session of the same server, pinged in the same rounds.
	_, ctl := flowtest.Dial(t, srv)
	stalled := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "tools/call", map[string]any{"name": "stall"})
		stalled <- err
	}()
	select {
	case <-stalling:
	case <-ctx.Done():
		t.Fatal("the upstream never said it was stalling")
	}
	// 100 KiB do not fit in a pipe (64 KiB): the bridge's write of them
	// waits until the upstream reads again.
	bigCtx, bigCancel := context.WithCancel(ctx)
	defer bigCancel()
	big := make(chan error, 1)
	go func() {
		_, err := s.Call(bigCtx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": strings.Repeat("x", 100<<10)}})
		big <- err
	}()
	ping := func(s *flow.Session, what string) time.Duration {
		pctx, pcancel := context.WithTimeout(ctx, stallGuard)
		defer pcancel()
		start := time.Now()
		if _, err := s.Call(pctx, "ping", nil); err != nil {
			t.Fatalf("%s while the upstream did not read its input: %v (guard %v)", what, err, stallGuard)
		}
		return time.Since(start)
	}
	// Pings may queue behind the large frame itself on the control stream
	// (its transfer and decoding, not the bridge's doing): what counts are
	// the pings after the server's handler has it, and $/cancel goes then.
	var worst, worstCtl time.Duration
	after := 0
	for after < stallRounds {
		// A notification each round: once the write is stuck, the queue
		// fills and the rest are dropped (spec §10), never waited for.
		if err := s.Notify("notifications/roots/list_changed", nil); err != nil {
			t.Fatal(err)
		}
		seen := false
		select {
		case <-bigSeen:
			seen = true
		default:
		}
		if seen && after == 0 {
			bigCancel() // the client sends $/cancel; the pings after it show it did not hold the session
			if err := <-big; !errors.Is(err, context.Canceled) {
				t.Fatalf("the cancelled call: %v", err)
			}
		}
		d := ping(s, "a ping")
		if seen {
			after++
			worst = max(worst, d)
			worstCtl = max(worstCtl, ping(ctl, "another session's ping"))
		}
		select {
		case err := <-stalled:
			t.Fatalf("the stall ended before it was let go: %v", err)
		default:
		}
	}
	t.Logf("%d pings answered while the upstream did not read its input; the slowest took %v, another session's %v", after, worst, worstCtl)
	resume()
	if err := <-stalled; err != nil {
		t.Fatalf("stall: %v", err)
	}
}

// holdingServer is a Streamable HTTP MCP server that holds a POST with a
// large body without reading it (a busy server) until the client abandons
// it or the test ends, and answers any other tools/call at once.
type holdingServer struct {
	held       chan struct{}        // a large POST arrived and is being held
	heldBody   chan error           // reading the held body once a cancel came: an error if it was abandoned
	cancelled  chan json.RawMessage // the requestId of each notifications/cancelled
	cancelSeen chan struct{}        // closed at the first notifications/cancelled
	once       sync.Once
	release    chan struct{}
}

func (h *holdingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	case r.Method != http.MethodPost:
		return
	case r.ContentLength > 256<<10:
		h.held <- struct{}{}
		select {
		case <-h.cancelSeen:
		case <-h.release:
			return
		}
		// (A server that has not read the body does not notice the
		// client leaving until it reads.)
		_, err := io.Copy(io.Discard, r.Body)
		h.heldBody <- err
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Mcp-Session-Id", "held-1")
	switch m.Method {
	case "initialize":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"holding","version":"1"}}}`, m.ID)
	case "tools/call":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"quick"}]}}`, m.ID)
	case "notifications/cancelled":
		h.cancelled <- m.Params.RequestID
		h.once.Do(func() { close(h.cancelSeen) })
		w.WriteHeader(http.StatusAccepted)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// smallSockBuf makes a socket's kernel buffers small (and fixed), so that a
// body the peer does not read stalls its writer at once.
func smallSockBuf(opt int) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, 16<<10) })
		return errors.Join(err, serr)
	}
}

// TestHTTPUpstreamHeldPOSTDoesNotBlockSession: the HTTP upstream holds one
// POST (a 1 MiB request it does not read); on the same MCP-Flow session
// another call is answered, a ping too, and a $/cancel of the held call
// reaches the upstream as notifications/cancelled and abandons the POST,
// each within a bound far below the hold (spec §10, "Backpressure").
func TestHTTPUpstreamHeldPOSTDoesNotBlockSession(t *testing.T) {
	h := &holdingServer{held: make(chan struct{}, 1), heldBody: make(chan error, 1), cancelled: make(chan json.RawMessage, 4),
		cancelSeen: make(chan struct{}), release: make(chan struct{})}
	ln, err := (&net.ListenConfig{Control: smallSockBuf(syscall.SO_RCVBUF)}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(h.release) }) // runs first
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Control: smallSockBuf(syscall.SO_SNDBUF)}).DialContext}}
	t.Cleanup(client.CloseIdleConnections)
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	upstream.NewHTTPUpstream(upstream.HTTPUpstreamConfig{Endpoint: ts.URL, HTTPClient: client, Logger: flowtest.Quiet}).Configure(&cfg)
	srv := flowtest.Serve(t, cfg)
	ctx, s := flowtest.Dial(t, srv)
	quick := func() time.Duration {
		start := time.Now()
		r, err := s.Call(ctx, "tools/call", map[string]any{"name": "quick"})
		if err != nil || !strings.Contains(string(r.Result), "quick") {
			t.Fatalf("quick: %v", err)
		}
		return time.Since(start)
	}
	quick()
	bound := heldBound

	heldCtx, heldCancel := context.WithCancel(ctx)
	heldErr := make(chan error, 1)
	go func() {
		_, err := s.Call(heldCtx, "tools/call", map[string]any{"name": "held", "arguments": map[string]string{"text": strings.Repeat("x", 1<<20)}})
		heldErr <- err
	}()
	select {
	case <-h.held:
	case <-ctx.Done():
		t.Fatal("the large POST never reached the upstream")
	}
	if d := quick(); d > bound {
		t.Errorf("another call took %v while the upstream held a POST (bound %v)", d, bound)
	}
	start := time.Now()
	if _, err := s.Call(ctx, "ping", nil); err != nil {
		t.Fatal(err)
	} else if d := time.Since(start); d > bound {
		t.Errorf("a ping took %v while the upstream held a POST (bound %v)", d, bound)
	}
	start = time.Now()
	heldCancel()
	if err := <-heldErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("the held call after $/cancel: %v", err)
	}
	select {
	case id := <-h.cancelled:
		if d := time.Since(start); d > bound {
			t.Errorf("notifications/cancelled reached the upstream %v after $/cancel (bound %v)", d, bound)
		}
		if string(id) == "" || string(id) == "null" {
			t.Errorf("notifications/cancelled for request %q", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/cancelled within 10 s of $/cancel")
	}
	select {
	case err := <-h.heldBody:
		if err == nil {
			t.Fatal("the cancelled call's POST was sent whole: the bridge did not abandon it")
		}
		t.Logf("bound %v; held body ends with %v", bound, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call's POST body neither ended nor failed 10 s after $/cancel")
	}
}
