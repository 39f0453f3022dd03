package fallback_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/fallback"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
)

// probe runs Probe with a 10 s bound and checks that it left nothing of
// its own running (a dial, a QUIC connection or transport).
func probe(t *testing.T, url string, cfg fallback.Config) (fallback.Transport, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	tr, why, err := fallback.Probe(ctx, url, cfg)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Probe %s: %v", url, err)
	}
	t.Logf("%s in %v: %s", tr, took, why)
	settled(t)
	return tr, why, took
}

// settled fails the test if a goroutine of Probe's or of quic-go's is
// still running (the lossrelay's own, per client, may stay).
func settled(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "quic-go/quic-go") && !strings.Contains(stacks, "fallback.Probe") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Probe left goroutines behind:\n%s", stacks)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProbeOpen: with UDP open, the QUIC handshake answers and the choice
// is MCP-Flow, at once.
func TestProbeOpen(t *testing.T) {
	url, fc := server(t)
	tr, why, took := probe(t, url, fallback.Config{Flow: fc})
	if tr != fallback.MCPFlow || !strings.HasPrefix(why, "QUIC answered in ") {
		t.Fatalf("%s (%s), want %s, QUIC answered", tr, why, fallback.MCPFlow)
	}
	if took >= fallback.DefaultBudget {
		t.Errorf("took %v, not within the budget", took)
	}
}

// TestProbeBlocked: with every UDP datagram dropped and TCP open at the
// same port, the choice is Streamable HTTP once the budget has passed.
func TestProbeBlocked(t *testing.T) {
	url, fc := server(t)
	blocked := flowtest.Behind(t, url, lossrelay.Blocked, lossrelay.Blocked)
	tr, why, took := probe(t, blocked, fallback.Config{Flow: fc})
	if tr != fallback.StreamableHTTP || !strings.HasPrefix(why, "no QUIC handshake within 400ms; TCP answered in ") {
		t.Fatalf("%s (%s), want %s after no QUIC handshake within 400ms", tr, why, fallback.StreamableHTTP)
	}
	if took < fallback.DefaultBudget {
		t.Errorf("chose TCP after %v, before the %v budget", took, fallback.DefaultBudget)
	}
	// A shorter budget is honoured.
	tr, why, _ = probe(t, blocked, fallback.Config{Flow: fc, Budget: 50 * time.Millisecond})
	if tr != fallback.StreamableHTTP || !strings.HasPrefix(why, "no QUIC handshake within 50ms") {
		t.Fatalf("budget 50ms: %s (%s)", tr, why)
	}
}

// TestProbeSlowPath: a 100 ms round trip on UDP is slow but works: the
// QUIC handshake answers within the budget.
func TestProbeSlowPath(t *testing.T) {
	url, fc := server(t)
	slow := flowtest.Behind(t, url, lossrelay.Path{Delay: 50 * time.Millisecond}, lossrelay.Path{Delay: 50 * time.Millisecond})
	tr, why, took := probe(t, slow, fallback.Config{Flow: fc})
	if tr != fallback.MCPFlow {
		t.Fatalf("%s (%s) over a 100 ms RTT UDP path, want %s", tr, why, fallback.MCPFlow)
	}
	if took < 100*time.Millisecond {
		t.Errorf("a 100 ms RTT handshake took %v", took)
	}
}

// TestProbeForcedAndFailures: a forced transport is taken without a dial;
// an unknown one, a URL that is not https, and a port nobody answers on
// are errors, and the last leaves nothing open.
func TestProbeForcedAndFailures(t *testing.T) {
	for _, tr := range []fallback.Transport{fallback.MCPFlow, fallback.StreamableHTTP} {
		got, why, err := fallback.Probe(context.Background(), "https://192.0.2.1:9/mcp-flow", fallback.Config{Transport: tr})
		if err != nil || got != tr || why != "forced" {
			t.Fatalf("forced %s: %s (%s), %v", tr, got, why, err)
		}
	}
	if _, _, err := fallback.Probe(context.Background(), "https://127.0.0.1:9/", fallback.Config{Transport: "carrier-pigeon"}); err == nil || !strings.Contains(err.Error(), "unknown transport") {
		t.Fatalf("an unknown transport: %v", err)
	}
	if _, _, err := fallback.Probe(context.Background(), "http://127.0.0.1:9/", fallback.Config{}); err == nil {
		t.Fatal("an http URL: no error")
	}
	// A port with no listener: QUIC gets no answer, TCP is refused once the
	// budget has passed, and the probe ends then, with both reasons.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	tr, why, err := fallback.Probe(ctx, "https://"+addr+"/mcp-flow", fallback.Config{Budget: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "QUIC: no QUIC handshake within 50ms") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("nothing listening: %s (%s), %v", tr, why, err)
	}
	took := time.Since(start)
	t.Logf("nothing listening: the probe took %v", took)
	// The 50 ms budget, then TCP's refusal: 50.7-51.7 ms measured with the
	// 2-core machine at load 4-6 (2026-12-06); a probe that waited out its
	// 5 s context instead is what this catches.
	if took > time.Second {
		t.Errorf("nothing listening: the probe took %v", took)
	}
	t.Logf("nothing listening: %v", err)
	settled(t)
}

// host is the host's side of a Relay: lines in, lines out.
type host struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func relay(t *testing.T, url string, cfg fallback.Config) *host {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &host{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		err := fallback.Relay(ctx, url, cfg, inR, outW)
		outW.CloseWithError(fmt.Errorf("relay returned: %v", err))
		h.done <- err
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
	})
	return h
}

func (h *host) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatalf("send: %v", err)
	}
}

// next reads the next line the relay wrote.
type msg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (h *host) next() msg {
	h.t.Helper()
	line, err := h.out.ReadBytes('\n')
	if err != nil {
		h.t.Fatalf("reading the relay's output: %v", err)
	}
	var m msg
	if err := json.Unmarshal(line, &m); err != nil {
		h.t.Fatalf("the relay wrote %q: %v", line, err)
	}
	return m
}

// answer reads lines up to the answer to id, returning it and the
// notifications before it.
func (h *host) answer(id string) (msg, []msg) {
	h.t.Helper()
	var notes []msg
	for {
		m := h.next()
		if m.Method == "" && string(m.ID) == id {
			return m, notes
		}
		if m.Method == "" {
			h.t.Fatalf("an answer to %s while waiting for %s", m.ID, id)
		}
		notes = append(notes, m)
	}
}

// headers records the requests the relay's HTTP client sends.
type headers struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []string // "METHOD version session status"
}

func (r *headers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	status := "error"
	if err == nil {
		status = fmt.Sprint(resp.StatusCode)
	}
	r.mu.Lock()
	r.seen = append(r.seen, fmt.Sprintf("%s %q %t %s", req.Method, req.Header.Get("MCP-Protocol-Version"), req.Header.Get("Mcp-Session-Id") != "", status))
	r.mu.Unlock()
	return resp, err
}

func (r *headers) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// TestRelay: a host's session relayed over Streamable HTTP to a real
// mcp-flow-server: garbage lines get -32700/-32600 and the relay goes on
// (a line over MaxLine too, held only up to the limit), initialize and
// calls pass through with the host's ids, progress arrives, a cancelled
// request's POST ends and the session goes on, the requests after
// initialize carry MCP-Protocol-Version, and EOF answers what is in flight,
// then DELETEs the session and returns nil.
func TestRelay(t *testing.T) {
	url, fc := server(t)
	rec := &headers{base: &http.Transport{TLSClientConfig: fc.TLSConfig, ForceAttemptHTTP2: true}}
	h := relay(t, url, fallback.Config{Flow: fc, HTTPClient: &http.Client{Transport: rec}})

	for _, c := range []struct {
		line string
		code int
	}{
		{"this is not json", -32700},
		{`{"x":1}`, -32600},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600},
	} {
		h.send(c.line)
		if m := h.next(); string(m.ID) != "null" || m.Error == nil || m.Error.Code != c.code {
			t.Fatalf("%q: %+v, want %d with id null", c.line, m, c.code)
		}
	}
	// A line three times MaxLine, written a buffer at a time.
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	alloc := ms.TotalAlloc
	go func() {
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range 3 * fallback.MaxLine / len(chunk) {
			if _, err := h.in.Write(chunk); err != nil {
				return
			}
		}
		h.in.Write([]byte("\n"))
	}()
	if m := h.next(); m.Error == nil || m.Error.Code != -32700 || !strings.Contains(m.Error.Message, "longer than") {
		t.Fatalf("a line over MaxLine: %+v", m)
	}
	runtime.ReadMemStats(&ms)
	if grew := ms.TotalAlloc - alloc; grew > 2*fallback.MaxLine {
		t.Errorf("a line of %d bytes cost %d bytes of allocation", 3*fallback.MaxLine, grew)
	}

	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"relay-test","version":"1"}}}`)
	m, _ := h.answer("1")
	if !strings.Contains(string(m.Result), `"protocolVersion":"2025-11-25"`) || !strings.Contains(string(m.Result), "mcp-flow-server") {
		t.Fatalf("initialize: %s %+v", m.Result, m.Error)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	if m, _ := h.answer(`"two"`); !strings.Contains(string(m.Result), `"text":"hi"`) {
		t.Fatalf("echo: %s %+v", m.Result, m.Error)
	}
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{"steps":3,"delayMs":20},"_meta":{"progressToken":"p"}}}`)
	m, notes := h.answer("3")
	if m.Error != nil || len(notes) == 0 || notes[0].Method != "notifications/progress" || !strings.Contains(string(notes[0].Params), `"progressToken":"p"`) {
		t.Fatalf("slow with progress: %+v, notifications %+v", m, notes)
	}
	// Cancel: the POST of 4 ends, the session goes on, 4 gets no answer.
	h.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow","arguments":{"steps":100,"delayMs":100}}}`)
	time.Sleep(200 * time.Millisecond)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"test"}}`)
	h.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if m, _ := h.answer("5"); m.Error != nil {
		t.Fatalf("ping after a cancel: %+v", m.Error)
	}
	// EOF with a request in flight: it is answered, then the relay ends.
	h.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"slow","arguments":{"steps":3,"delayMs":50}}}`)
	h.in.Close()
	if m, _ := h.answer("6"); m.Error != nil {
		t.Fatalf("the request in flight at EOF: %+v", m.Error)
	}
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatalf("Relay at EOF: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Relay did not return after EOF")
	}
	seen := rec.list()
	t.Logf("requests: %q", seen)
	if last := seen[len(seen)-1]; last != `DELETE "2025-11-25" true 204` && last != `DELETE "2025-11-25" true 200` {
		t.Errorf("the last request was %s, want the session's DELETE", last)
	}
	for _, s := range seen[1:] { // all after initialize's POST
		if !strings.Contains(s, `"2025-11-25" true`) {
			t.Errorf("a request after initialize without its version or session: %s", s)
		}
	}
}
