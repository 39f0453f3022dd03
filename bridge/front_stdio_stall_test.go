package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// toHostLog records when the front handed the response to each host
// request id to its front (the debug record "to host"), and the warnings.
type toHostLog struct {
	mu       sync.Mutex
	at       map[string]time.Time
	waiting  map[string]chan struct{}
	warnings []string
	warned   chan struct{} // closed (and replaced) on each warning
}

func newToHostLog() *toHostLog {
	return &toHostLog{at: map[string]time.Time{}, waiting: map[string]chan struct{}{}, warned: make(chan struct{})}
}

func (l *toHostLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *toHostLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *toHostLog) WithGroup(string) slog.Handler            { return l }
func (l *toHostLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Level >= slog.LevelWarn {
		s := r.Message
		r.Attrs(func(a slog.Attr) bool { s += " " + a.Key + "=" + a.Value.String(); return true })
		l.warnings = append(l.warnings, s)
		close(l.warned)
		l.warned = make(chan struct{})
	}
	if r.Message != "to host" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "response" {
			id := strings.Trim(a.Value.String(), `"`)
			if _, ok := l.at[id]; !ok {
				l.at[id] = r.Time
				if ch := l.waiting[id]; ch != nil {
					close(ch)
				}
			}
		}
		return true
	})
	return nil
}

// wait returns when the response to id was handed over, within d.
func (l *toHostLog) wait(t *testing.T, id string, d time.Duration) time.Time {
	t.Helper()
	l.mu.Lock()
	at, ok := l.at[id]
	ch := l.waiting[id]
	if !ok && ch == nil {
		ch = make(chan struct{})
		l.waiting[id] = ch
	}
	l.mu.Unlock()
	if ok {
		return at
	}
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("the response to %s was not handed to the front within %v", id, d)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at[id]
}

// waitWarning returns the first warning that contains substr, waiting up
// to d for it.
func (l *toHostLog) waitWarning(t *testing.T, substr string, d time.Duration) string {
	t.Helper()
	timeout := time.After(d)
	for {
		l.mu.Lock()
		for _, w := range l.warnings {
			if strings.Contains(w, substr) {
				l.mu.Unlock()
				return w
			}
		}
		ch, all := l.warned, strings.Join(l.warnings, "\n")
		l.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("no warning %q within %v; warnings:\n%s", substr, d, all)
		}
	}
}

// stallRig is a real MCP-Flow server and a stdio front running over OS
// pipes, with the host side driven by the test.
type stallRig struct {
	t         *testing.T
	srvSess   chan *flow.Session
	cancelled chan time.Time // when a handler saw its request cancelled
	log       *toHostLog
	in        *os.File // the host's end of the bridge's stdin
	out       *bufio.Reader
	done      chan error
}

func newStallRig(t *testing.T, cfg bridge.StdioConfig) *stallRig {
	mux, caps := flowtest.ToolsMux(t, demotools.Config{})
	r := &stallRig{t: t, srvSess: make(chan *flow.Session, 1), cancelled: make(chan time.Time, 8), log: newToHostLog(), done: make(chan error, 1)}
	var once sync.Once
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet, Capabilities: caps,
		Handler: flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
			once.Do(func() { r.srvSess <- req.Session })
			if req.Method == "tools/call" && strings.Contains(string(req.Params), `"name":"ordered"`) {
				return orderedResult(req)
			}
			res, err := mux.HandleRequest(ctx, req)
			if ctx.Err() != nil {
				r.cancelled <- time.Now()
			}
			return res, err
		})})
	cfg.URL = srv.URL()
	cfg.Client = flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet}
	cfg.Logger = slog.New(r.log)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.in, r.out = inW, bufio.NewReaderSize(outR, 1<<20)
	b := bridge.NewStdio(cfg)
	go func() {
		err := b.Run(context.Background(), inR, outW)
		outW.Close()
		inR.Close()
		r.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		go func() { _, _ = r.out.WriteTo(devNull{}) }() // unblock the bridge's writer
		select {
		case <-r.done:
		case <-time.After(20 * time.Second):
			t.Error("the stdio front did not end 20 s after its input")
		}
		outR.Close()
	})
	return r
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

func (r *stallRig) send(format string, a ...any) time.Time {
	r.t.Helper()
	t0 := time.Now()
	if _, err := fmt.Fprintf(r.in, format+"\n", a...); err != nil {
		r.t.Fatal(err)
	}
	return t0
}

// hostMessage is what the host reads.
type hostMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int `json:"code"`
	} `json:"error"`
}

func (r *stallRig) read() hostMessage {
	r.t.Helper()
	line, err := r.out.ReadBytes('\n')
	if err != nil {
		r.t.Fatalf("reading the bridge's stdout: %v", err)
	}
	var m hostMessage
	if err := json.Unmarshal(line, &m); err != nil {
		r.t.Fatalf("stdout line %.200q: %v", line, err)
	}
	return m
}

func (r *stallRig) initialize() *flow.Session {
	r.t.Helper()
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	if m := r.read(); m.Error != nil || m.Result == nil {
		r.t.Fatalf("initialize: %+v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(`{"jsonrpc":"2.0","id":"first","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	if m := r.read(); string(m.ID) != `"first"` || m.Error != nil {
		r.t.Fatalf("echo: %+v", m)
	}
	return <-r.srvSess
}

// TestStdioFrontHostStallBlocksNothing: a host that stops reading the
// bridge's stdout for 4 s, while a 1 MiB result is being written to it and
// progress keeps coming, holds up nothing on the MCP-Flow session (spec
// §10): the server's pings to the bridge, the host's other requests and its
// cancellation each take a few ms, not the 4 s of the stall. Afterwards the
// host gets everything, in order.
func TestStdioFrontHostStallBlocksNothing(t *testing.T) {
	t.Parallel()
	r := newStallRig(t, bridge.StdioConfig{})
	srvSess := r.initialize()

	// The stall: the host reads nothing from here on. The 1 MiB result
	// fills the pipe (64 KiB), so the bridge's writes to stdout block.
	stallStart := time.Now()
	r.send(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"generate","arguments":{"bytes":1048576}}}`)
	r.log.wait(t, "big", 10*time.Second)
	// Progress on the control stream (a front asks for no datagrams) goes
	// through the session's hooks while stdout is blocked.
	r.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slow","arguments":{"steps":20,"delayMs":20},"_meta":{"progressToken":"tok"}}}`)
	r.send(`{"jsonrpc":"2.0","id":"victim","method":"tools/call","params":{"name":"slow","arguments":{"steps":400,"delayMs":10}}}`)

	// The stall is 4 s and the pings stop 1.5 s before its end, so a ping
	// that the stall blocks waits at least 1.5 s; bound tells the two
	// apart. Measured: 0.5-2.2 ms under -race at load 10, up to 212 ms with
	// the parallel race run of two suites side by side (2026-12-06).
	const (
		stall = 4 * time.Second
		bound = time.Second
	)
	var worst time.Duration
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	cancelSent := false
	for i := 0; time.Since(stallStart) < stall-1500*time.Millisecond; i++ {
		<-tick.C
		// The server pings the bridge: answered by the bridge's session
		// reading loop, which a blocking hook would hold.
		t0 := time.Now()
		if err := srvSess.Ping(ctx); err != nil {
			t.Fatalf("server's ping to the bridge: %v", err)
		}
		if d := time.Since(t0); d > worst {
			worst = d
		}
		// The host's own requests get answered (handed to the queue).
		id := fmt.Sprintf("p%d", i)
		sent := r.send(`{"jsonrpc":"2.0","id":"%s","method":"ping"}`, id)
		if d := r.log.wait(t, id, 5*time.Second).Sub(sent); d > bound {
			t.Errorf("host ping %s answered after %v during the stall (bound %v)", id, d, bound)
		}
		if !cancelSent && time.Since(stallStart) > 500*time.Millisecond {
			cancelSent = true
			sent := r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"victim","reason":"test"}}`)
			select {
			case at := <-r.cancelled:
				if d := at.Sub(sent); d > bound {
					t.Errorf("the cancellation reached the server's handler after %v (bound %v)", d, bound)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the cancellation did not reach the server's handler within 5 s")
			}
		}
	}
	if worst > bound {
		t.Errorf("the server's ping to the bridge took up to %v during the host's stall (bound %v)", worst, bound)
	}
	t.Logf("during the stall: worst server→bridge ping %v", worst)
	// End of the stall: the host reads everything, in order.
	time.Sleep(time.Until(stallStart.Add(stall)))
	progress, gotSlow, gotBig := 0, false, false
	for !gotSlow || !gotBig {
		m := r.read()
		switch {
		case m.Method == "notifications/progress" && string(m.Params.ProgressToken) == `"tok"`:
			if gotSlow {
				t.Fatal("progress after its result")
			}
			progress++
		case string(m.ID) == `"big"`:
			gotBig = true
			if m.Error != nil || len(m.Result) < 1<<20 {
				t.Fatalf("big result: %d bytes, error %+v", len(m.Result), m.Error)
			}
		case string(m.ID) == `"slow"`:
			gotSlow = true
		case string(m.ID) == `"victim"`:
			t.Fatalf("a cancelled request was answered: %+v", m)
		}
	}
	if progress != 20 {
		t.Errorf("%d progress notifications, want 20 (none is dropped below the queue's limit)", progress)
	}
}

// TestStdioFrontHostQueueLimit crosses StdioConfig.HostQueue: while the
// host reads nothing, the notifications past the queue's limit are dropped
// and counted (the session's hooks never wait), and the responses wait for
// room; once the host reads again it gets every response, and the drops
// are logged with their number.
func TestStdioFrontHostQueueLimit(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	r := newStallRig(t, bridge.StdioConfig{HostQueue: limit})
	r.initialize()
	r.send(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"generate","arguments":{"bytes":1048576}}}`)
	r.log.wait(t, "big", 10*time.Second)
	const count = 3000
	r.send(`{"jsonrpc":"2.0","id":"burst","method":"tools/call","params":{"name":"progress_burst","arguments":{"count":%d},"_meta":{"progressToken":"tok"}}}`, count)
	r.log.wait(t, "burst", 10*time.Second)
	r.log.waitWarning(t, "notifications are dropped", 10*time.Second)
	progress, gotBurst, gotBig := 0, false, false
	for !gotBurst || !gotBig {
		m := r.read()
		switch {
		case m.Method == "notifications/progress":
			progress++
		case string(m.ID) == `"big"`:
			gotBig = m.Error == nil && len(m.Result) > 1<<20
		case string(m.ID) == `"burst"`:
			gotBurst = m.Error == nil
		}
	}
	w := r.log.waitWarning(t, "caught up", 10*time.Second)
	var dropped int
	if _, err := fmt.Sscanf(w[strings.Index(w, "notificationsDropped="):], "notificationsDropped=%d", &dropped); err != nil {
		t.Fatalf("warning %q: %v", w, err)
	}
	if dropped == 0 || progress+dropped != count {
		t.Fatalf("%d progress notifications delivered and %d dropped, want %d in all with some dropped", progress, dropped, count)
	}
	t.Logf("queue limit %d bytes: %d progress notifications delivered, %d dropped", limit, progress, dropped)
	// The session goes on.
	r.send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	if m := r.read(); string(m.ID) != `"after"` || m.Error != nil {
		t.Fatalf("ping after the drops: %+v", m)
	}
}

// orderedResult is a tool result whose members are in no sorted order,
// with a text stream on an execution stream and an image whose payload an
// upstream bridge moved to one (its original block, minus its data, in
// _meta).
func orderedResult(req *flow.Request) (any, error) {
	text, err := req.StreamFrom(strings.NewReader("<ストリーム & text>"), "text/plain; charset=utf-8")
	if err != nil {
		return nil, err
	}
	img, err := req.StreamFrom(strings.NewReader("\x89PNG"), "image/png")
	if err != nil {
		return nil, err
	}
	return json.RawMessage(fmt.Sprintf(`{"structuredContent":{"z":1,"a":[2,1]},"content":[{"type":"text","text":"first"},`+
		`{"type":"ref/stream","streamTag":%d,"mimeType":"text/plain; charset=utf-8"},`+
		`{"type":"ref/stream","streamTag":%d,"mimeType":"image/png","_meta":{"io.mcp-flow/original":{"block":{"type":"image","mimeType":"image/png","annotations":{"priority":1,"audience":["user"]}},"field":"data"}}}],`+
		`"_meta":{"z":true,"a":null},"isError":false}`, text.StreamTag, img.StreamTag)), nil
}

// TestStdioFrontKeepsResultBytes: through the stdio front, a result with
// execution streams reaches the host with only its ref/stream blocks
// replaced (the text inline; the image put back as its original block)
// and every other byte as the server sent it, members in their order: the
// front splices, it does not decode the result into maps and marshal it
// again.
func TestStdioFrontKeepsResultBytes(t *testing.T) {
	t.Parallel()
	r := newStallRig(t, bridge.StdioConfig{})
	r.initialize()
	r.send(`{"jsonrpc":"2.0","id":"o","method":"tools/call","params":{"name":"ordered","arguments":{}}}`)
	line, err := r.out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":"o","result":{"structuredContent":{"z":1,"a":[2,1]},"content":[{"type":"text","text":"first"},` +
		`{"type":"text","text":"<ストリーム & text>"},` +
		`{"type":"image","mimeType":"image/png","annotations":{"priority":1,"audience":["user"]},"data":"iVBORw=="}],` +
		`"_meta":{"z":true,"a":null},"isError":false}}` + "\n"
	if line != want {
		t.Fatalf("the host got\n%s\nwant\n%s", line, want)
	}
}
