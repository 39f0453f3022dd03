package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
// killed, a POST in flight gets its error (-32603: it may have run) at once
// on its SSE stream; the session itself survives (spec §10): a request
// while the server is down waits ReconnectWait and fails with -32006 (it
// did not run), and once the server is back the same session id is
// answered, on a new MCP-Flow session the front opened with the client's
// initialize. A graceful restart likewise. With ExitOnDisconnect (the
// server's own TCP side) the session ends instead and its id gets 404.
func TestHTTPFrontAfterServerRestart(t *testing.T) {
	t.Parallel()
	srv := startServer(t, buildServer(t))
	hash, _ := certs.ParseHash(srv.hash)
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{hash}})
	quiet := flowtest.Quiet
	const wait = time.Second
	newFront := func(exitOnDisconnect bool) string {
		front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.url,
			Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: quiet, Limits: flow.Limits{PeerIdleTimeout: liveness, KeepAlivePeriod: keepAlive}}, Logger: quiet,
			ReconnectWait: wait, ReconnectMin: 50 * time.Millisecond, ReconnectMax: 100 * time.Millisecond, ExitOnDisconnect: exitOnDisconnect}})
		ts := httptest.NewServer(front)
		// After the streams' bodies are closed (cleanups run last first);
		// the front's sessions end with the test: none reconnects after it.
		t.Cleanup(func() { ts.CloseClientConnections(); front.Close(); ts.Close() })
		return ts.URL
	}
	tsURL := newFront(false)
	initialize := func(tsURL string) string {
		t.Helper()
		r, body := send(t, tsURL, "POST", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
		id := r.Header.Get("MCP-Session-Id")
		if r.StatusCode != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d %s; server stderr:\n%s", r.StatusCode, body, srv.logs())
		}
		send(t, tsURL, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"MCP-Session-Id": id})
		return id
	}
	echo := func(tsURL, sid string) (int, string) {
		r, body := send(t, tsURL, "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, map[string]string{"MCP-Session-Id": sid})
		return r.StatusCode, body
	}
	echoOK := func(tsURL, sid string) {
		t.Helper()
		if c, body := echo(tsURL, sid); c != http.StatusOK || !strings.Contains(body, `"text":"hi"`) {
			t.Fatalf("echo: %d %s", c, body)
		}
	}
	open := func(method, sid, body string) *http.Response {
		req, _ := http.NewRequest(method, tsURL, strings.NewReader(body))
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

	sid := initialize(tsURL)
	echoOK(tsURL, sid)
	post := sseMessages(open("POST", sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"steps":1000,"delayMs":100},"_meta":{"progressToken":"t"}}}`).Body)
	if m := <-post; m.Method != "notifications/progress" {
		t.Fatalf("want progress first, got %+v", m)
	}
	t0 := time.Now()
	srv.kill()
	timeout := time.After(lostBound)
	for answered := false; !answered; {
		select {
		case m, ok := <-post:
			if !ok {
				t.Fatal("the POST stream ended without an answer")
			}
			if m.Method != "" {
				continue
			}
			if m.Error == nil || m.Error.Code != -32603 || !strings.Contains(m.Error.Message, srv.url) {
				t.Fatalf("answer to the POST in flight: %+v", m)
			}
			answered = true
		case <-timeout:
			t.Fatalf("%v after SIGKILL: no answer to the POST in flight", lostBound)
		}
	}
	t.Logf("POST in flight answered %v after SIGKILL", time.Since(t0))
	// The server is down: the request waits for a new session, then fails
	// with -32006 (it was not sent); the session is not ended.
	t1 := time.Now()
	if c, body := echo(tsURL, sid); c != http.StatusOK || !strings.Contains(body, `"code":-32006`) || !strings.Contains(body, "no new session within "+wait.String()) {
		t.Fatalf("echo while the server is down: %d %s", c, body)
	}
	took := time.Since(t1)
	t.Logf("the request during the outage failed after %v (ReconnectWait %v)", took, wait)
	if took < wait || took > lostBound {
		t.Fatalf("the request during the outage failed after %v, want %v to %v", took, wait, lostBound)
	}
	srv.start()
	deadline := time.Now().Add(30 * time.Second)
	for { // the front reconnects within ReconnectMax of the server's start
		c, body := echo(tsURL, sid)
		if c != http.StatusOK {
			t.Fatalf("the session whose server was killed answered %d, want 200 (it reconnects)", c)
		}
		if strings.Contains(body, `"text":"hi"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reconnection in 30 s: %s", body)
		}
	}

	// Graceful: SIGTERM drains the MCP-Flow session; the front's session
	// reconnects and keeps its id.
	srv.term()
	srv.start()
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, body := echo(tsURL, sid)
		if c != http.StatusOK {
			t.Fatalf("the session whose server shut down answered %d, want 200 (it reconnects)", c)
		}
		if strings.Contains(body, `"text":"hi"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reconnection in 30 s: %s", body)
		}
	}
	if r, _ := send(t, tsURL, "DELETE", "", map[string]string{"MCP-Session-Id": sid}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", r.StatusCode)
	}

	// ExitOnDisconnect: the session ends with its MCP-Flow session (404),
	// and its GET stream ends.
	exitURL := newFront(true)
	sid2 := initialize(exitURL)
	echoOK(exitURL, sid2)
	req, _ := http.NewRequest("GET", exitURL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Session-Id", sid2)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	srv.term()
	for range sseMessages(resp.Body) {
	}
	srv.start()
	if c, _ := echo(exitURL, sid2); c != http.StatusNotFound {
		t.Fatalf("with ExitOnDisconnect, the session whose server shut down answered %d, want 404", c)
	}
	sid3 := initialize(exitURL)
	echoOK(exitURL, sid3)
}

// TestHTTPFront2025SessionSurvivesRestart: go-sdk Streamable HTTP clients in
// 2025-11-25 (a session each) call through the HTTP front without pause,
// some calls lasting a while, while the server behind it shuts down
// gracefully and starts again. The drain answers the calls in flight; the
// calls that reach the front meanwhile wait for its new MCP-Flow session,
// which it opens with each client's initialize (spec §10), and go there.
// None fails: the go-sdk client fails every call of its session on a 404,
// which the front used to answer once its MCP-Flow session had ended.
func TestHTTPFront2025SessionSurvivesRestart(t *testing.T) {
	t.Parallel()
	srv := startServer(t, buildServer(t))
	hash, _ := certs.ParseHash(srv.hash)
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{hash}})
	front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.url,
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet, Limits: flow.Limits{PeerIdleTimeout: liveness, KeepAlivePeriod: keepAlive}},
		Logger: flowtest.Quiet, ReconnectMin: 50 * time.Millisecond, ReconnectMax: 200 * time.Millisecond}})
	ts := httptest.NewServer(front)
	t.Cleanup(func() { ts.CloseClientConnections(); front.Close(); ts.Close() }) // the front's sessions end with the test: none reconnects after it
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const clients, callers = 4, 4
	var (
		stop         atomic.Bool
		ok, slowOK   atomic.Int64
		retried      atomic.Int64 // calls refused as not processed (-32006), sent again
		afterRestart atomic.Int64
		restarted    atomic.Bool
		mu           sync.Mutex
		failures     []string
		wg           sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	for c := range clients {
		cl := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("host-%d", c), Version: "1"}, nil)
		cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
			t.Fatalf("negotiated %s", v)
		}
		for k := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; !stop.Load(); i++ {
					text := fmt.Sprintf("%d.%d.%d", c, k, i)
					var r *mcp.CallToolResult
					var err error
					slow := k == 0 // one caller per client holds a call in flight most of the time
					if slow {
						r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]int{"steps": 4, "delayMs": 100}})
					} else {
						r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]string{"text": text}})
					}
					var we *sdkjsonrpc.Error
					switch {
					case err != nil && errors.As(err, &we) && we.Code == int64(jsonrpc.CodeShuttingDown):
						// Not processed: retry (spec §8). A loaded
						// machine may restart the server past
						// ReconnectWait; the call did not run.
						retried.Add(1)
						continue
					case err != nil:
						fail("client %d call %s: %v", c, text, err)
						return
					case r.IsError:
						fail("client %d call %s: tool error %v", c, text, r.Content)
						return
					case !slow && r.Content[0].(*mcp.TextContent).Text != text:
						fail("client %d call %s: answered %v", c, text, r.Content)
						return
					}
					if slow {
						slowOK.Add(1)
					} else {
						ok.Add(1)
					}
					if restarted.Load() {
						afterRestart.Add(1)
					}
				}
			}()
		}
	}
	for ok.Load() < 50 { // calls are flowing
		time.Sleep(10 * time.Millisecond)
	}
	before := ok.Load() + slowOK.Load()
	srv.term()
	srv.start()
	restarted.Store(true)
	for deadline := time.Now().Add(30 * time.Second); afterRestart.Load() < 50 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d calls failed, first: %s; server stderr:\n%s", len(failures), failures[0], srv.logs())
	}
	if afterRestart.Load() < 50 {
		t.Fatalf("only %d calls answered after the restart", afterRestart.Load())
	}
	t.Logf("answered: %d before SIGTERM, %d in all (%d slow), %d after the restart; none failed; %d refused as not processed and sent again", before, ok.Load()+slowOK.Load(), slowOK.Load(), afterRestart.Load(), retried.Load())
}

// TestHTTPFrontStatelessRedials: a 2026-07-28 request that reaches the HTTP
// front while its server is down is not failed when the front's dial fails:
// the dial is tried again, up to ReconnectWait, and the request is sent once
// the server is back (spec §10). It used to get -32603 "… lost" at once.
func TestHTTPFrontStatelessRedials(t *testing.T) {
	t.Parallel()
	srv := startServer(t, buildServer(t))
	hash, _ := certs.ParseHash(srv.hash)
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{hash}})
	front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.url,
		// A dial to a server that is down fails after 300 ms (rather than
		// waiting out QUIC's retransmissions until the server is back).
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet, Limits: flow.Limits{PeerIdleTimeout: liveness, KeepAlivePeriod: keepAlive, HandshakeTimeout: 300 * time.Millisecond}},
		Logger: flowtest.Quiet, ReconnectWait: 20 * time.Second, ReconnectMin: 50 * time.Millisecond, ReconnectMax: 200 * time.Millisecond}})
	ts := httptest.NewServer(front)
	t.Cleanup(func() { ts.CloseClientConnections(); front.Close(); ts.Close() }) // the front's sessions end with the test: none reconnects after it
	echo := func(id int, text string) (int, string, error) {
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(modernBody(id, "tools/call", `{"name":"echo","arguments":{"text":"`+text+`"}}`)))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		for k, v := range modern("tools/call", "echo") {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	if c, body, err := echo(1, "before"); err != nil || c != http.StatusOK || !strings.Contains(body, `"text":"before"`) {
		t.Fatalf("echo: %d %s %v", c, body, err)
	}
	srv.term() // the front's session drains; the server is down
	type answer struct {
		code int
		body string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		c, body, err := echo(2, "during")
		got <- answer{c, body, err}
	}()
	time.Sleep(1500 * time.Millisecond) // the front's dials fail meanwhile
	t0 := time.Now()
	srv.start()
	select {
	case a := <-got:
		if a.err != nil || a.code != http.StatusOK || !strings.Contains(a.body, `"text":"during"`) {
			t.Fatalf("the request sent while the server was down: %d %s %v", a.code, a.body, a.err)
		}
		t.Logf("answered %v after the server started", time.Since(t0))
	case <-time.After(30 * time.Second):
		t.Fatal("no answer 30 s after the server started")
	}
}
