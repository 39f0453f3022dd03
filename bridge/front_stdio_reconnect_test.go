package bridge_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestStdioFrontReconnects: the real bridge binary, driven as a host drives
// it, survives its server being killed and restarted (and shut down
// gracefully and restarted): the request in flight fails at once with an
// error naming the server, and the host's next request succeeds without
// restarting the bridge; the bridge logs what state was lost.
func TestStdioFrontReconnects(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestStdioFrontReconnectWait: while the server is down, attempts follow
// the backoff (ReconnectMin doubling to ReconnectMax), each logged; a host
// request waits ReconnectWait for a new session and then fails with an
// error naming the server; once the server is back, the host's requests
// succeed.
func TestStdioFrontReconnectWait(t *testing.T) {
	t.Parallel()
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
	// A request while the server is down waits ReconnectWait, then fails
	// with -32006.
	t1 := time.Now()
	h.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	m, line := h.response("2", 10*time.Second)
	took := time.Since(t1)
	t.Logf("the request during the outage failed after %v (ReconnectWait %v)", took, wait)
	if took < wait || took > lostBound {
		t.Fatalf("the request during the outage failed after %v, want %v to %v", took, wait, lostBound)
	}
	// -32006: it was not sent, did not run, and may be retried (spec §8).
	if m.Error == nil || m.Error.Code != -32006 || !strings.Contains(m.Error.Message, srv.url) || !strings.Contains(m.Error.Message, "no new session within "+wait.String()) {
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
