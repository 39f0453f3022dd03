package flow_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
)

// events collects what one side's Hooks.Observe receives.
type events struct {
	mu      sync.Mutex
	all     []flow.Event
	changed chan struct{} // cap 1: an event came
}

func newEvents() *events { return &events{changed: make(chan struct{}, 1)} }

func (ev *events) observe(e flow.Event) {
	ev.mu.Lock()
	ev.all = append(ev.all, e)
	ev.mu.Unlock()
	select {
	case ev.changed <- struct{}{}:
	default:
	}
}

// match returns the events for which f is true.
func (ev *events) match(f func(flow.Event) bool) []flow.Event {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var out []flow.Event
	for _, e := range ev.all {
		if f(e) {
			out = append(out, e)
		}
	}
	return out
}

func (ev *events) kind(k flow.EventKind) []flow.Event {
	return ev.match(func(e flow.Event) bool { return e.Kind == k })
}

// waitFor waits until at least n events match f.
func (ev *events) waitFor(t *testing.T, what string, n int, f func(flow.Event) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for len(ev.match(f)) < n {
		select {
		case <-ev.changed:
		case <-deadline:
			t.Fatalf("%s: %d events after 30 s, want %d", what, len(ev.match(f)), n)
		}
	}
}

func ofKind(k flow.EventKind) func(flow.Event) bool {
	return func(e flow.Event) bool { return e.Kind == k }
}

// countBy counts events by a key.
func countBy(es []flow.Event, key func(flow.Event) string) map[string]int {
	m := map[string]int{}
	for _, e := range es {
		m[key(e)]++
	}
	return m
}

func requestKey(e flow.Event) string {
	return fmt.Sprintf("%s inbound=%v %s %d", e.Method, e.Inbound, e.Outcome, e.Code)
}

func datagramKey(e flow.Event) string {
	return fmt.Sprintf("ch%d inbound=%v %s", e.Channel, e.Inbound, e.Outcome)
}

func wantCounts(t *testing.T, side, what string, got, want map[string]int) {
	t.Helper()
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s %s %q: %d, want %d", side, what, k, got[k], n)
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s %s %q: %d, want none", side, what, k, n)
		}
	}
}

// workloadHandler is the test tools, and three methods of the tests:
// test/block waits until it is cancelled (started says it runs);
// test/progress reports 1, waits until the client has it (got1), then
// reports 2 and 3 at once; test/logs sends two log datagrams.
func workloadHandler(t *testing.T, started chan<- struct{}, got1 <-chan struct{}) flow.Handler {
	tools, _ := flowtest.ToolsMux(t, demotools.Config{Root: t.TempDir()})
	tools["test/block"] = flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	tools["test/progress"] = flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		if err := req.Progress(1, 3, ""); err != nil {
			return nil, err
		}
		select {
		case <-got1:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return nil, errors.New("the client never got progress 1")
		}
		// The sender waits a second (MaxProgressRate 1) before it sends
		// again: 3 replaces 2 in the slot, and goes on the control stream
		// before the result.
		_ = req.Progress(2, 3, "")
		_ = req.Progress(3, 3, "")
		return map[string]any{}, nil
	})
	tools["test/logs"] = flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		for range 2 {
			if err := req.Log("info", "test", "a line"); err != nil {
				return nil, err
			}
		}
		return map[string]any{}, nil
	})
	return tools
}

// TestObserveWorkload runs a known workload between a real server and
// client and checks every event of both sides, kind by kind, exactly.
func TestObserveWorkload(t *testing.T) {
	srvEv, cliEv := newEvents(), newEvents()
	started := make(chan struct{}, 1)
	got1 := make(chan struct{})
	var once sync.Once
	srv := customServer(t, workloadHandler(t, started, got1), func(c *flow.ServerConfig) {
		c.Hooks.Observe = srvEv.observe
		c.Limits.MaxProgressRate = 1
	})
	s := dial(t, srv, func(c *flow.ClientConfig) {
		c.Hooks.Observe = cliEv.observe
		c.Hooks.Datagram = func(*flow.Session, wire.DatagramHeader, json.RawMessage) {}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	for i := range 3 {
		if got := textOf(t, callTool(t, s, "echo", map[string]any{"text": fmt.Sprint("hello ", i)})); got != fmt.Sprint("hello ", i) {
			t.Fatalf("echo: %q", got)
		}
	}
	var je *jsonrpc.Error
	if _, err := s.Call(ctx, "tools/call", map[string]any{"name": "no-such-tool"}); !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown tool: %v, want -32602", err)
	}
	bctx, bcancel := context.WithCancel(ctx)
	blocked := make(chan error, 1)
	go func() {
		_, err := s.Call(bctx, "test/block", nil)
		blocked <- err
	}()
	<-started
	bcancel()
	if err := <-blocked; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if _, err := s.Call(ctx, "test/progress", map[string]any{}, flow.WithProgress(func(p flow.Progress) {
		if p.Progress == 1 {
			once.Do(func() { close(got1) })
		}
	})); err != nil {
		t.Fatalf("test/progress: %v", err)
	}
	if _, err := s.Call(ctx, "test/logs", map[string]any{}); err != nil {
		t.Fatalf("test/logs: %v", err)
	}
	const size = 100_000
	r := callTool(t, s, "generate", map[string]any{"bytes": size})
	sr, err := r.Stream(ctx, r.Refs[0].StreamTag)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, sr); err != nil || n != size {
		t.Fatalf("stream: %d bytes, %v", n, err)
	}
	// A stream that fails midway (the writer resets it), and one that the
	// client refuses unread (r2's second).
	rf := callTool(t, s, "fail_midstream", map[string]any{"bytes": 1000})
	// (Its $/streamError may come before its header: Stream fails then.)
	if sr, err := rf.Stream(ctx, rf.Refs[0].StreamTag); err != nil && !errors.As(err, new(*flow.StreamError)) {
		t.Fatal(err)
	} else if err == nil {
		if _, err := io.Copy(io.Discard, sr); err == nil {
			t.Fatal("fail_midstream read whole")
		}
	}
	r2 := callTool(t, s, "generate", map[string]any{"bytes": 10, "streams": 2})
	for i, ref := range r2.Refs[:2] {
		sr, err := r2.Stream(ctx, ref.StreamTag)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if n, err := io.Copy(io.Discard, sr); n != 10 || err != nil {
				t.Fatalf("10-byte stream: %d, %v", n, err)
			}
		}
		sr.Close()
	}
	if _, resp, err := dialRaw(t, srv, http.Header{"Origin": {"https://evil.example"}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign origin: %v %v, want 403", resp, err)
	}
	// Datagrams are not ordered with the answers: wait for the log lines.
	cliEv.waitFor(t, "client log datagrams", 2, func(e flow.Event) bool { return e.Kind == flow.EventDatagram && e.Channel == 3 })
	if err := s.Shutdown(ctx, "done"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	srvEv.waitFor(t, "server session close", 1, ofKind(flow.EventSessionClose))
	cliEv.waitFor(t, "client session close", 1, ofKind(flow.EventSessionClose))

	for _, side := range []struct {
		name   string
		ev     *events
		server bool
	}{{"server", srvEv, true}, {"client", cliEv, false}} {
		for _, e := range side.ev.match(func(flow.Event) bool { return true }) {
			if e.Server != side.server {
				t.Errorf("%s: %v event with Server %v", side.name, e.Kind, e.Server)
			}
		}
		if o := side.ev.kind(flow.EventSessionOpen); len(o) != 1 || o[0].Encoding != codec.CBOR {
			t.Errorf("%s session opens: %+v, want one in cbor", side.name, o)
		}
		if c := side.ev.kind(flow.EventSessionClose); len(c) != 1 || c[0].CloseCode != flow.CloseOK || c[0].Duration <= 0 || c[0].Reason == "" {
			t.Errorf("%s session closes: %+v, want one with code 0, a reason and a duration", side.name, c)
		}
		reqs := side.ev.kind(flow.EventRequest)
		for _, e := range reqs {
			if e.Duration <= 0 || e.ID == "" {
				t.Errorf("%s request without duration or id: %+v", side.name, e)
			}
		}
		in := side.server // the server's requests are the peer's; the client's its own calls
		wantCounts(t, side.name, "requests", countBy(reqs, requestKey), map[string]int{
			fmt.Sprintf("tools/call inbound=%v ok 0", in):             6, // 3 echo, 2 generate, fail_midstream
			fmt.Sprintf("tools/call inbound=%v error -32602", in):     1,
			fmt.Sprintf("test/block inbound=%v cancelled -32800", in): 1,
			fmt.Sprintf("test/progress inbound=%v ok 0", in):          1,
			fmt.Sprintf("test/logs inbound=%v ok 0", in):              1,
		})
		cancels := side.ev.kind(flow.EventCancel)
		blockReq := side.ev.match(func(e flow.Event) bool { return e.Kind == flow.EventRequest && e.Method == "test/block" })
		if len(cancels) != 1 || cancels[0].Inbound != side.server || cancels[0].Method != "test/block" || len(blockReq) != 1 || cancels[0].ID != blockReq[0].ID {
			t.Errorf("%s cancels: %+v, want one of test/block (%+v), inbound %v", side.name, cancels, blockReq, side.server)
		}
		// Streams, by request and tag: generate's 100,000 bytes; fail_midstream's
		// 1,000 then a reset with -32603 (the client may get fewer: a reset
		// discards what was not sent); generate's two of 10 bytes, the second
		// refused by the client unread (-32800; the server's writer has
		// usually closed it by then, else it sees the refusal as a failed
		// write).
		streams := map[string]flow.Event{}
		for _, e := range side.ev.kind(flow.EventStream) {
			k := fmt.Sprintf("%s/%d", e.ID, e.Tag)
			if _, dup := streams[k]; dup || e.Inbound == side.server || e.Method != "tools/call" {
				t.Errorf("%s stream event %+v: a second one, or inbound %v, or not tools/call", side.name, e, e.Inbound)
			}
			streams[k] = e
		}
		type want struct {
			outcome      string
			code         int64
			bytes        int64
			fewer, loose bool // bytes at most; any outcome (a race)
		}
		wantStreams := map[string]want{
			r.ID.String() + "/1":  {"ok", 0, size, false, false},
			rf.ID.String() + "/1": {"reset", -32603, 1000, !side.server, false},
			r2.ID.String() + "/1": {"ok", 0, 10, false, false},
			r2.ID.String() + "/2": {"reset", -32800, 0, false, false},
		}
		if side.server {
			wantStreams[r2.ID.String()+"/2"] = want{"", 0, 10, true, true}
		}
		if len(streams) != len(wantStreams) {
			t.Errorf("%s: %d stream events, want %d", side.name, len(streams), len(wantStreams))
		}
		for k, w := range wantStreams {
			e, ok := streams[k]
			switch {
			case !ok:
				t.Errorf("%s: no stream event for %s", side.name, k)
			case w.loose && (e.Outcome == "ok" || e.Outcome == "reset") && e.Bytes <= w.bytes:
			case e.Outcome != w.outcome || e.Code != w.code || (!w.fewer && e.Bytes != w.bytes) || e.Bytes > w.bytes:
				t.Errorf("%s stream %s: %+v, want %+v", side.name, k, e, w)
			}
		}
		checkStreamPairs(t, side.name, side.ev, side.server)
		wantDatagrams := map[string]int{"ch1 inbound=true received": 1, "ch3 inbound=true received": 2}
		wantRefused := 0
		if side.server {
			wantDatagrams = map[string]int{"ch1 inbound=false sent": 1, "ch1 inbound=false superseded": 1, "ch3 inbound=false sent": 2}
			wantRefused = 1
		}
		wantCounts(t, side.name, "datagrams", countBy(side.ev.kind(flow.EventDatagram), datagramKey), wantDatagrams)
		if ref := side.ev.kind(flow.EventRefused); len(ref) != wantRefused || (wantRefused == 1 && (ref[0].Outcome != "origin" || !strings.Contains(ref[0].Reason, "evil.example"))) {
			t.Errorf("%s refusals: %+v, want %d (origin)", side.name, ref, wantRefused)
		}
	}

	// Control frames: what one side wrote, the other read, frame for frame
	// and byte for byte; the first frame each way is JSON (initialize and
	// its result, spec §4.2), every other one CBOR.
	control := func(ev *events, inbound bool) (n int, bytes int64, enc map[codec.Name]int) {
		enc = map[codec.Name]int{}
		for _, e := range ev.match(func(e flow.Event) bool { return e.Kind == flow.EventControl && e.Inbound == inbound }) {
			n++
			bytes += e.Bytes
			enc[e.Encoding]++
			if e.Bytes <= wire.FrameHeaderLen {
				t.Errorf("control frame of %d bytes", e.Bytes)
			}
		}
		return n, bytes, enc
	}
	for _, dir := range []struct {
		name     string
		from, to *events
	}{{"client to server", cliEv, srvEv}, {"server to client", srvEv, cliEv}} {
		wn, wb, wenc := control(dir.from, false)
		rn, rb, renc := control(dir.to, true)
		if wn != rn || wb != rb || wn < 8 {
			t.Errorf("%s: %d frames (%d bytes) written, %d (%d bytes) read", dir.name, wn, wb, rn, rb)
		}
		if wenc[codec.JSON] != 1 || renc[codec.JSON] != 1 || wenc[codec.CBOR] != wn-1 || renc[codec.CBOR] != rn-1 {
			t.Errorf("%s: encodings written %v, read %v; want one json frame, the rest cbor", dir.name, wenc, renc)
		}
	}
	if t.Failed() {
		for _, side := range []*events{srvEv, cliEv} {
			for _, e := range side.match(func(e flow.Event) bool { return e.Kind != flow.EventControl }) {
				t.Logf("server=%v %v %+v", e.Server, e.Kind, e)
			}
		}
	}
}

// checkStreamPairs checks that each execution stream's EventStreamOpen has
// exactly one EventStream, after it, of the same request, tag and
// direction, and each EventStream an open: so many opens, so many ends
// (what mcpflow_streams_open counts down to 0). Written streams are the
// server's, read ones the client's.
func checkStreamPairs(t *testing.T, side string, ev *events, server bool) {
	t.Helper()
	open := map[string]int{} // by request/tag: opens not yet ended
	opens, ends := 0, 0
	for _, e := range ev.match(func(e flow.Event) bool { return e.Kind == flow.EventStreamOpen || e.Kind == flow.EventStream }) {
		k := fmt.Sprintf("%s/%d inbound=%v", e.ID, e.Tag, e.Inbound)
		if e.Inbound == server || e.Method == "" {
			t.Errorf("%s %v %+v: inbound %v on this side, or no method", side, e.Kind, e, e.Inbound)
		}
		if e.Kind == flow.EventStreamOpen {
			opens++
			if open[k] != 0 {
				t.Errorf("%s: a second EventStreamOpen for %s", side, k)
			}
			open[k]++
			continue
		}
		ends++
		if open[k] != 1 {
			t.Errorf("%s: an EventStream for %s with no EventStreamOpen before it", side, k)
		}
		open[k]--
	}
	if opens != ends {
		t.Errorf("%s: %d execution streams opened, %d ended; want as many ends as opens", side, opens, ends)
	}
}

// TestObserveStreamsAtSessionClose: a session closed (Close, no drain)
// while an execution stream is open on both sides (the server's handler
// wrote part of it and never closes its writer; the client read part of
// it) still ends each stream it opened, once, at its end: "reset", -32800.
func TestObserveStreamsAtSessionClose(t *testing.T) {
	srvEv, cliEv := newEvents(), newEvents()
	srv := customServer(t, flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		w, err := req.OpenStream("application/octet-stream")
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(make([]byte, 1000)); err != nil {
			return nil, err
		}
		// w is never closed nor failed: only the session's end ends it.
		return map[string]any{"content": []any{w.Ref()}}, nil
	}), func(c *flow.ServerConfig) { c.Hooks.Observe = srvEv.observe })
	s := dial(t, srv, func(c *flow.ClientConfig) { c.Hooks.Observe = cliEv.observe })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := s.Call(ctx, "test/hold", nil)
	if err != nil {
		t.Fatal(err)
	}
	sr, err := r.Stream(ctx, r.Refs[0].StreamTag)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(sr, make([]byte, 100)); err != nil {
		t.Fatalf("reading the first 100 bytes: %v", err)
	}
	srvEv.waitFor(t, "server stream open", 1, ofKind(flow.EventStreamOpen))
	cliEv.waitFor(t, "client stream open", 1, ofKind(flow.EventStreamOpen))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	srvEv.waitFor(t, "server session close", 1, ofKind(flow.EventSessionClose))
	cliEv.waitFor(t, "client session close", 1, ofKind(flow.EventSessionClose))
	for _, side := range []struct {
		name   string
		ev     *events
		server bool
	}{{"server", srvEv, true}, {"client", cliEv, false}} {
		checkStreamPairs(t, side.name, side.ev, side.server)
		o, e := side.ev.kind(flow.EventStreamOpen), side.ev.kind(flow.EventStream)
		if len(o) != 1 || len(e) != 1 {
			t.Errorf("%s: opens %+v, ends %+v; want one each", side.name, o, e)
			continue
		}
		if e[0].Outcome != "reset" || e[0].Code != int64(jsonrpc.CodeRequestCancelled) || e[0].ID != r.ID.String() || e[0].Method != "test/hold" {
			t.Errorf("%s: stream end %+v, want test/hold %s reset with -32800 at the session's end", side.name, e[0], r.ID)
		}
	}
}

// TestObserveRefusals: each way a server refuses a CONNECT or a session
// before READY is one EventRefused, on ServerConfig.Hooks.Observe; sessions
// that never were READY get no EventSessionOpen nor EventSessionClose.
func TestObserveRefusals(t *testing.T) { synctest.Test(t, testObserveRefusals) }

func testObserveRefusals(t *testing.T) {
	srvEv, cliEv := newEvents(), newEvents()
	started := make(chan struct{}, 1)
	cfg := flow.ServerConfig{Handler: workloadHandler(t, started, nil), Hooks: flow.Hooks{Observe: srvEv.observe}, Encodings: []codec.Name{codec.JSON}}
	cfg.Limits.MaxSessions = 2
	cfg.Limits.HandshakeTimeout = 2 * time.Second
	srv := flowtest.MemServer(t, cfg)
	refused := func(outcome string) func(flow.Event) bool {
		return func(e flow.Event) bool { return e.Kind == flow.EventRefused && e.Outcome == outcome }
	}
	// A client that opens its control stream and says nothing.
	_, wts, err := flowtest.MemDial(srv)(t.Context(), flowtest.MemURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer wts.CloseWithError(0, "")
	if _, err := wts.OpenStreamSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	srvEv.waitFor(t, "handshake timeout", 1, refused("handshakes"))
	// A client whose encodings the server does not speak: initialize is
	// refused, and the client leaves.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := flow.Dial(ctx, flowtest.MemURL, flow.ClientConfig{DialSession: flowtest.MemDial(srv), Encodings: []codec.Name{codec.CBOR},
		Logger: flowtest.Quiet, Hooks: flow.Hooks{Observe: cliEv.observe}}); err == nil {
		t.Fatal("Dial with no common encoding succeeded")
	}
	srvEv.waitFor(t, "refused initialize", 1, refused("initialize"))
	for deadline := time.Now().Add(30 * time.Second); srv.Sessions() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still open", srv.Sessions())
		}
	}
	// MaxSessions.
	a := memDial(t, srv)
	memDial(t, srv)
	if resp, _, err := flowtest.MemDial(srv)(ctx, flowtest.MemURL, nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third session: %v %v, want 503", resp, err)
	}
	srvEv.waitFor(t, "MaxSessions", 1, refused("sessions"))
	// A CONNECT while the server drains a session with a call in flight.
	blocked := make(chan error, 1)
	bctx, bcancel := context.WithCancel(ctx)
	go func() {
		_, err := a.Call(bctx, "test/block", nil)
		blocked <- err
	}()
	<-started
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	select {
	case <-a.Draining():
	case <-ctx.Done():
		t.Fatal("no $/shutdown")
	}
	if resp, _, err := flowtest.MemDial(srv)(ctx, flowtest.MemURL, nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a CONNECT during Shutdown: %v %v, want 503", resp, err)
	}
	srvEv.waitFor(t, "shutting down", 1, refused("shutting-down"))
	bcancel()
	<-blocked
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	srvEv.waitFor(t, "session closes", 2, ofKind(flow.EventSessionClose))

	wantCounts(t, "server", "refusals", countBy(srvEv.kind(flow.EventRefused), func(e flow.Event) string { return e.Outcome }),
		map[string]int{"handshakes": 1, "initialize": 1, "sessions": 1, "shutting-down": 1})
	for _, e := range srvEv.kind(flow.EventRefused) {
		if !e.Server || e.Reason == "" {
			t.Errorf("refusal %+v: want Server and a reason", e)
		}
	}
	if o, c := len(srvEv.kind(flow.EventSessionOpen)), len(srvEv.kind(flow.EventSessionClose)); o != 2 || c != 2 {
		t.Errorf("server: %d opens, %d closes; want 2 each (the refused sessions were never open)", o, c)
	}
	if n := len(cliEv.match(func(e flow.Event) bool {
		return e.Kind == flow.EventSessionOpen || e.Kind == flow.EventSessionClose || e.Kind == flow.EventRefused
	})); n != 0 {
		t.Errorf("a client whose Dial failed: %d session events, want none", n)
	}
}

// logLine is one line of a slog JSON handler.
type logLine map[string]any

func (l logLine) str(k string) string { s, _ := l[k].(string); return s }

// logWorkload runs a workload with both sides logging at level into
// buffers: an echo whose argument is argMarker, a tool call whose name is
// argMarker (its error says so), a cancelled call, a 5,000-byte execution
// stream, with token in the CONNECT's Authorization and in the URL's query;
// then a graceful shutdown. It returns the two logs.
func logWorkload(t *testing.T, level slog.Level, argMarker, token string) (server, client *flowtest.SyncBuffer) {
	server, client = &flowtest.SyncBuffer{}, &flowtest.SyncBuffer{}
	srvEv, cliEv := newEvents(), newEvents()
	started := make(chan struct{}, 1)
	srv := customServer(t, workloadHandler(t, started, nil), func(c *flow.ServerConfig) {
		c.Logger = slog.New(slog.NewJSONHandler(server, &slog.HandlerOptions{Level: level}))
		c.Hooks.Observe = srvEv.observe
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, srv.URL()+"?token="+token, flow.ClientConfig{
		TLSConfig: clientTLS(t),
		Logger:    slog.New(slog.NewJSONHandler(client, &slog.HandlerOptions{Level: level})),
		Header:    http.Header{"Authorization": {"Bearer " + token}},
		Hooks:     flow.Hooks{Observe: cliEv.observe},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := textOf(t, callTool(t, s, "echo", map[string]any{"text": argMarker})); got != argMarker {
		t.Fatalf("echo: %q", got)
	}
	if _, err := s.Call(ctx, "tools/call", map[string]any{"name": argMarker, "arguments": map[string]any{"x": argMarker}}); err == nil || !strings.Contains(err.Error(), argMarker) {
		t.Fatalf("unknown tool: %v, want an error naming it", err)
	}
	bctx, bcancel := context.WithCancel(ctx)
	blocked := make(chan error, 1)
	go func() {
		_, err := s.Call(bctx, "test/block", map[string]any{"secret": argMarker})
		blocked <- err
	}()
	<-started
	bcancel()
	<-blocked
	r := callTool(t, s, "generate", map[string]any{"bytes": 5000})
	sr, err := r.Stream(ctx, r.Refs[0].StreamTag)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, sr); n != 5000 || err != nil {
		t.Fatalf("stream: %d, %v", n, err)
	}
	if err := s.Shutdown(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	// The logs are complete once each side has sent its last event.
	srvEv.waitFor(t, "server session close", 1, ofKind(flow.EventSessionClose))
	cliEv.waitFor(t, "client session close", 1, ofKind(flow.EventSessionClose))
	return server, client
}

// TestDebugLogs: at debug level each side logs one line per request,
// cancel, execution stream end and session end, with their fields; and a
// tool argument or a token appears in no line at all.
func TestDebugLogs(t *testing.T) {
	const marker, token = "ARGUMENT-MARKER-5f1d", "TOKEN-MARKER-9c2e"
	server, client := logWorkload(t, slog.LevelDebug, marker, token)
	for _, side := range []struct {
		name string
		log  string
	}{{"server", server.String()}, {"client", client.String()}} {
		if strings.Contains(side.log, marker) || strings.Contains(side.log, token) {
			t.Errorf("%s log names a tool argument or the token:\n%s", side.name, side.log)
		}
		byMsg := map[string][]logLine{}
		sc := bufio.NewScanner(strings.NewReader(side.log))
		for sc.Scan() {
			var l logLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("%s log line %q: %v", side.name, sc.Text(), err)
			}
			byMsg[l.str("msg")] = append(byMsg[l.str("msg")], l)
		}
		reqs := map[string]int{}
		for _, l := range byMsg["request"] {
			if l.str("id") == "" || l["duration"] == nil || l.str("side") != side.name {
				t.Errorf("%s request line without id, duration or side: %v", side.name, l)
			}
			reqs[fmt.Sprintf("%s %s %v", l.str("method"), l.str("outcome"), l["code"])]++
		}
		wantCounts(t, side.name, "request lines", reqs, map[string]int{
			"tools/call ok 0": 2, "tools/call error -32602": 1, "test/block cancelled -32800": 1,
		})
		if c := byMsg["cancel"]; len(c) != 1 || c[0].str("method") != "test/block" || c[0].str("id") == "" {
			t.Errorf("%s cancel lines: %v, want one of test/block", side.name, c)
		}
		if st := byMsg["stream"]; len(st) != 1 || st[0]["bytes"] != float64(5000) || st[0].str("outcome") != "ok" || st[0]["tag"] != float64(1) || st[0].str("method") != "tools/call" {
			t.Errorf("%s stream lines: %v, want one of 5000 bytes, tag 1, ok", side.name, st)
		}
		if c := byMsg["session closed"]; len(c) != 1 || c[0]["code"] != float64(0) || c[0].str("words") != "clean shutdown" {
			t.Errorf("%s session closed lines: %v, want one, code 0, clean shutdown", side.name, c)
		}
	}
}

// TestInfoLogsQuiet: at the default level a normal session logs nothing,
// on either side.
func TestInfoLogsQuiet(t *testing.T) {
	server, client := logWorkload(t, slog.LevelInfo, "ARGUMENT-MARKER-77aa", "TOKEN-MARKER-1b3c")
	for _, side := range []struct {
		name string
		log  string
	}{{"server", server.String()}, {"client", client.String()}} {
		for _, line := range strings.Split(strings.TrimSpace(side.log), "\n") {
			if line == "" || strings.Contains(line, "UDP buffers") {
				continue // the server's start-up warning about this machine's kernel
			}
			t.Errorf("%s logged at info level: %s", side.name, line)
		}
	}
}

// TestObserveRawPeer: what a hand-driven client makes the server report:
// requests refused before the Handler (a duplicate id, past
// MaxRequestsInFlight), a request ended by notifications/cancelled (no
// answer) and one by $/cancel, a late $/cancel (nothing), and datagrams that
// are read or dropped.
func TestObserveRawPeer(t *testing.T) {
	srvEv := newEvents()
	started := make(chan struct{}, 2)
	srv := customServer(t, workloadHandler(t, started, nil), func(c *flow.ServerConfig) {
		c.Hooks.Observe = srvEv.observe
		c.Limits.MaxRequestsInFlight = 2
	})
	p := initRaw(t, srv)
	p.write(frame(`{"jsonrpc":"2.0","id":1,"method":"test/block"}`))
	<-started
	p.write(frame(`{"jsonrpc":"2.0","id":1,"method":"test/block"}`))
	expectError(t, p.read(), `1`, jsonrpc.CodeInvalidRequest)
	p.write(frame(`{"jsonrpc":"2.0","id":2,"method":"test/block"}`))
	<-started
	p.write(frame(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`))
	expectError(t, p.read(), `3`, jsonrpc.CodeTooManyRequests)
	p.write(frame(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`))
	p.write(frame(`{"jsonrpc":"2.0","method":"$/cancel","params":{"requestId":2}}`))
	expectError(t, p.read(), `2`, jsonrpc.CodeRequestCancelled)
	p.write(frame(`{"jsonrpc":"2.0","method":"$/cancel","params":{"requestId":2}}`))
	for _, d := range [][]byte{
		{3}, // too short for a header
		append(wire.DatagramHeader{Channel: 3}.Append(nil), "{{"...), // not JSON
		append(wire.DatagramHeader{Channel: 3}.Append(nil), `{"level":"info","data":"x"}`...),
		append(wire.DatagramHeader{Channel: 1, RequestID: 99}.Append(nil), `{"progressToken":99,"progress":1}`...),
	} {
		if err := p.sess.SendDatagram(d); err != nil {
			t.Fatal(err)
		}
	}
	srvEv.waitFor(t, "datagrams", 4, ofKind(flow.EventDatagram))
	p.write(frame(`{"jsonrpc":"2.0","id":9,"method":"ping"}`))
	if got := string(p.read()); got != `{"jsonrpc":"2.0","id":9,"result":{}}` {
		t.Fatalf("ping: %s", got)
	}
	wantCounts(t, "server", "requests", countBy(srvEv.kind(flow.EventRequest), requestKey), map[string]int{
		"test/block inbound=true error -32600":     1,
		"tools/call inbound=true error -32005":     1,
		"test/block inbound=true cancelled -32800": 2,
	})
	wantCounts(t, "server", "cancels", countBy(srvEv.kind(flow.EventCancel), func(e flow.Event) string {
		return fmt.Sprintf("%s %s inbound=%v", e.Method, e.ID, e.Inbound)
	}), map[string]int{"test/block 1 inbound=true": 1, "test/block 2 inbound=true": 1})
	wantCounts(t, "server", "datagrams", countBy(srvEv.kind(flow.EventDatagram), datagramKey), map[string]int{
		"ch3 inbound=true dropped": 2, "ch3 inbound=true received": 1, "ch1 inbound=true received": 1,
	})
}

// TestObserveStatelessSession: a 2026-07-28 session ($/hello, then
// requests with their own _meta) opens on the server with its first
// request, and each side reports it open and closed once.
func TestObserveStatelessSession(t *testing.T) {
	srvEv, cliEv := newEvents(), newEvents()
	srv := startServer(t, func(c *flow.ServerConfig) { c.Hooks.Observe = srvEv.observe })
	s := dial(t, srv, func(c *flow.ClientConfig) {
		c.ProtocolVersion = protocol.MCP20260728
		c.Hooks.Observe = cliEv.observe
	})
	callTool(t, s, "echo", map[string]any{"text": "x"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	for _, side := range []struct {
		name string
		ev   *events
	}{{"server", srvEv}, {"client", cliEv}} {
		side.ev.waitFor(t, side.name+" session close", 1, ofKind(flow.EventSessionClose))
		if o, c := side.ev.kind(flow.EventSessionOpen), side.ev.kind(flow.EventSessionClose); len(o) != 1 || len(c) != 1 || o[0].Encoding != codec.CBOR || c[0].CloseCode != flow.CloseOK {
			t.Errorf("%s: opens %+v, closes %+v; want one each, cbor, code 0", side.name, o, c)
		}
		if r := side.ev.kind(flow.EventRequest); len(r) != 1 || r[0].Method != "tools/call" || r[0].Outcome != "ok" {
			t.Errorf("%s requests: %+v, want one tools/call ok", side.name, r)
		}
	}
}
