// Package js holds the npm package @mcp-flow/webtransport (src/index.js,
// index.d.ts) and its test: the real MCP SDK clients, v2 and v1, over the
// package's WebTransportClientTransport in headless Chromium, against the
// test tools on an MCP-Flow server; and its access tokens (auth_test.go,
// docs/spec.md §9.1) in Chromium and Firefox.
package js

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// callError is how the page reports a call that should fail: the error's
// text, code, the request id and stream tag of an MCPFlowError, and the
// time it took; Timeout when it did not settle in the page's own deadline.
type callError struct {
	Error      *string
	Code       any
	RequestID  *int `json:"requestId"`
	StreamTag  *int `json:"streamTag"`
	Ms         int
	Timeout    bool
	ID         int
	Answered   *int
	URI        string
	StreamWait int
	// IncomingError is the transport's incomingStreamsError: the engine
	// stopped delivering incoming streams (Deno: TestDenoResetBeforePrefix).
	IncomingError *string `json:"incomingError"`
	Streamed      *struct {
		Bytes            int64
		SHA256, Reported string
		Counted          int64
	}
}

func (e callError) String() string {
	b, _ := json.Marshal(e)
	return string(b)
}

type sdkRun struct {
	Version, Encoding string
	ServerTransport   flow.ServerTransport
	Tools             []string
	Echo              string
	Generate          struct {
		Link             string
		Bytes            int64
		SHA256, Reported string
		Ms               int
	}
	Inline struct {
		Bytes            int64
		SHA256, Reported string
	}
	Progress struct {
		Updates   [][2]float64
		Datagrams int
	}
	Cancel        callError
	FailMidstream callError
	FailLate      *callError
	ReadResource  struct {
		callError
		MimeType, SHA256, Reported string
		Bytes                      int64
	}
	ReadText *struct {
		callError
		MimeType string
		HasBlob  bool
		Chars    int
		SHA256   string
	}
	TooLarge *callError
	Tone     struct {
		ID     int
		Result demotools.ToneInfo
		Chunks []struct {
			RequestID int `json:"requestId"`
			Seq       int
			Data      []byte
		}
		AudioDatagrams, AudioBytes int
	}
	Log struct {
		ID     int
		Text   string
		Events []struct {
			RequestID     *int `json:"requestId"`
			Level, Logger string
			Data          any
			Datagram      bool
		}
		SDK, LogDatagrams  int
		DatagramsSupported bool
	}
	Sampling   string
	Sent       []string
	Stats      map[string]float64
	LeftUnread int
	CloseMs    float64
	Closed     bool
	Errors     []string
}

// textFile is the text that read_file serves for the resources/read test:
// past the inline limit, so that it comes as a resource_link, and not ASCII.
func textFile() []byte {
	line := []byte("こんにちは, MCP-Flow: a stream of text read through resources/read.\n")
	return bytes.Repeat(line, (9<<20)/len(line)+1)
}

// phantomStream wraps the tools: tools/call of phantom_stream answers with a
// ref/stream whose stream never comes (spec §5.3).
func phantomStream(next flow.Handler) flow.Handler {
	return flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		var p struct{ Name string }
		if json.Unmarshal(req.Params, &p) == nil && p.Name == "phantom_stream" {
			return map[string]any{"content": []any{map[string]any{"type": "ref/stream", "streamTag": 7, "mimeType": "application/octet-stream"}}}, nil
		}
		return next.HandleRequest(ctx, req)
	})
}

// TestSDKClientsOverMCPFlow runs test/page.js: SDK v2 and v1 clients over
// the transport, each through the test tools, and the transport's limits
// (issue 23): a failed stream fails its call within 1 s; a cancelled call
// rejects with its reason while the server's -32800 reaches the transport
// and no further; resources/read of a stream's URI gives its bytes (text for
// text), and past readResourceLimit an error that says to stream it, with
// stream() still giving every byte, counted once; audio and log datagrams
// come as onaudio and onlog (and logs as the SDK's notifications/message);
// close() with a result's stream left unread does not wait out its 3 s
// wait for the server's end of the control stream (bound: 1 s, a hang's
// bound, not a speed: 4-16 ms on a quiet machine, 148 ms seen in Firefox
// under two suites side by side); unread
// streams are cancelled after unreadStreamTimeout, so a later stream comes
// long before the server's 30 s stall timeout; a ref/stream with no stream
// fails with -32001 after streamWait.
func TestSDKClientsOverMCPFlow(t *testing.T) {
	browsertest.NPM(t, ".", "node_modules/@modelcontextprotocol/client")
	runs := map[string]engineRun{}
	if path := os.Getenv("MCP_FLOW_INTEROP_OUT"); path != "" {
		defer func() {
			b, _ := json.Marshal(map[string]any{"engines": runs})
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Error(err)
			}
		}()
	}
	const timeout = 150 * time.Second
	t.Run("chromium", func(t *testing.T) {
		chromium := browsertest.Chromium(t)
		var run engineRun
		defer func() { runs["chromium"] = run }()
		sdkClientsOverMCPFlow(t, "chromium", &run, func(pageURL string, v any) {
			browsertest.Drive(t, ".", "test/run.mjs", chromium, pageURL, timeout, v)
		})
	})
	t.Run("firefox", func(t *testing.T) {
		firefox := browsertest.Firefox(t)
		browsertest.NPM(t, ".", "node_modules/puppeteer-core")
		var run engineRun
		defer func() { runs["firefox"] = run }()
		sdkClientsOverMCPFlow(t, "firefox", &run, func(pageURL string, v any) {
			browsertest.DriveFirefox(t, ".", "test/firefox.mjs", firefox, pageURL, timeout, v)
		})
	})
	// Deno runs the page's bundle as a script (test/deno.mjs): the query
	// reaches it as its location.
	t.Run("deno", func(t *testing.T) {
		deno := browsertest.Deno(t)
		var run engineRun
		defer func() { runs["deno"] = run }()
		sdkClientsOverMCPFlow(t, "deno", &run, func(pageURL string, v any) {
			browsertest.DriveDeno(t, ".", deno, []string{"--location=" + pageURL}, "test/deno.mjs", timeout, v)
		})
	})
}

// sdkChecks are the checks of one engine's run, as make interop names them:
// per SDK (v2.*, v1.*), and of the transport itself (transport.*).
var sdkChecks = func() []string {
	var out []string
	for _, v := range []string{"v2", "v1"} {
		for _, c := range []string{"initialize", "tools/list", "echo", "stream", "inline", "progress", "cancel", "stream-error", "resources/read", "audio", "log", "sampling", "close"} {
			out = append(out, v+"."+c)
		}
	}
	return append(out, "transport.read-text", "transport.read-limit", "transport.parts", "transport.stream-error",
		"transport.phantom-ref", "transport.unread", "transport.cancel", "transport.cert-hash", "transport.close")
}()

// engineRun is one engine's verdicts, for the interop matrix.
type engineRun struct {
	UserAgent string            `json:"userAgent"`
	Verdicts  map[string]string `json:"verdicts"`
}

// verdicts records each failed check and reports it on t.
type verdicts struct {
	t      *testing.T
	failed map[string]string
}

// known records a check that fails for a known reason outside this
// project (an engine's bug, reproduced by a test of its own): a cell of
// the matrix, not an error of the test.
func (v *verdicts) known(check, msg string) {
	v.t.Helper()
	if _, seen := v.failed[check]; !seen {
		v.failed[check] = "fail: " + msg
	}
	v.t.Logf("%s: known failure: %s", check, msg)
}

func (v *verdicts) fail(check, format string, args ...any) {
	v.t.Helper()
	msg := fmt.Sprintf(format, args...)
	if _, seen := v.failed[check]; !seen {
		v.failed[check] = "fail: " + msg
	}
	v.t.Errorf("%s: %s", check, msg)
}

// denoResetBug is the verdict of the Deno run's stream-error checks: they
// may pass in a run, but a Deno application cannot rely on them, since a
// stream reset before Deno read its prefix loses every later stream of the
// session (how often depends on timing: about every other run here).
const denoResetBug = "Deno upstream bug: an execution stream reset before Deno has read its WebTransport prefix ends incomingUnidirectionalStreams, so no later stream of the session arrives (Deno offers no RESET_STREAM_AT; TestDenoResetBeforePrefix, docs/INTEROP.md)"

// streamErrorChecks are the checks of streams that the server fails; in
// Deno they are denoResetBug's.
var streamErrorChecks = []string{"v2.stream-error", "v1.stream-error", "transport.stream-error"}

// judgeIncoming checks the transport's incomingStreamsError of a session
// that failed streams: none in an engine that delivers every stream; in
// Deno none or exactly denoResetSymptom (anything else: Deno changed).
func judgeIncoming(v *verdicts, engine, check string, c callError) {
	v.t.Helper()
	if c.IncomingError == nil {
		return
	}
	if engine != "deno" || !strings.Contains(*c.IncomingError, denoResetSymptom) {
		v.fail(check, "the engine stopped delivering incoming streams: %s", *c.IncomingError)
		return
	}
	v.t.Logf("%s: Deno's incoming streams ended after the early reset, as TestDenoResetBeforePrefix shows: %s", check, *c.IncomingError)
}

// sdkClientsOverMCPFlow runs test/page.js in one engine through drive,
// against a server of its own, and judges it.
func sdkClientsOverMCPFlow(t *testing.T, engine string, run *engineRun, drive func(pageURL string, v any)) {
	v := &verdicts{t: t, failed: map[string]string{}}
	run.Verdicts = map[string]string{}
	judged := false
	defer func() {
		if !judged { // stopped by a Fatal: no check is known to pass
			run.Verdicts["run"] = "fail: stopped before its checks (see the test's log)"
			if f, ok := v.failed["run"]; ok {
				run.Verdicts["run"] = f
			}
			return
		}
		for _, c := range sdkChecks {
			run.Verdicts[c] = "pass"
			if f, ok := v.failed[c]; ok {
				run.Verdicts[c] = f
			}
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pageOrigin := "http://" + ln.Addr().String()
	pages := &http.Server{Handler: http.FileServer(http.Dir("."))}
	go pages.Serve(ln)
	t.Cleanup(func() { pages.Close() })

	root := t.TempDir()
	text := textFile()
	if err := os.WriteFile(filepath.Join(root, "big.txt"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	textSum := sha256.Sum256(text)

	// The test tools, with each tools/call's end recorded: the cancel
	// step must stop the server's handler ($/cancel), not only the SDK.
	mux, caps := flowtest.ToolsMux(t, demotools.Config{Root: root})
	var mu sync.Mutex
	var cancelled []string
	tools := phantomStream(mux["tools/call"])
	mux["tools/call"] = flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		res, err := tools.HandleRequest(ctx, req)
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			mu.Lock()
			cancelled = append(cancelled, cause.Error())
			mu.Unlock()
		}
		return res, err
	})
	// No AllowedOrigins: a page on loopback may use a loopback server (spec §9).
	srv := flowtest.Serve(t, flow.ServerConfig{Handler: mux, Capabilities: caps})

	const size, size1, readSize, bigSize, leftSize = 64 << 20, 12 << 20, 12 << 20, 20_000_000, 32 << 20
	pageURL := fmt.Sprintf("%s/test/index.html?url=%s&hash=%s&size=%d&size1=%d&readSize=%d&bigSize=%d&leftSize=%d&textFile=big.txt&only=%s&debug=%s",
		pageOrigin, url.QueryEscape(srv.URL()), flowtest.Cert.HashHex(), size, size1, readSize, bigSize, leftSize, os.Getenv("MCP_FLOW_JS_ONLY"), os.Getenv("MCP_FLOW_JS_DEBUG"))
	var res struct {
		Error  string
		Trail  []string
		V2, V1 sdkRun
		Raw    struct {
			Fatal        string
			URI          string
			Stream, Late callError
		}
		Phantom struct {
			callError
			Fatal string
		}
		Unread struct {
			Fatal                                  string
			Timeout, Links, Released, AgainAfterMs int
			Later                                  struct {
				callError
				Bytes            int64
				SHA256, Reported string
			}
			Again callError
		}
		BadHash   struct{ Error *string }
		Console   []string
		UserAgent string
	}
	drive(pageURL, &res)
	run.UserAgent = res.UserAgent
	if res.Error != "" {
		v.failed["run"] = "fail: " + res.Error
		t.Fatalf("the page failed: %s\nsteps:\n%s\nconsole:\n%s", res.Error, strings.Join(res.Trail, "\n"), strings.Join(res.Console, "\n"))
	}
	t.Logf("browser: %s", res.UserAgent)
	for _, r := range []struct {
		run  sdkRun
		size int64
	}{{res.V2, size}, {res.V1, size1}} {
		s := r.run
		name := "SDK " + s.Version
		key := s.Version + "."
		if s.Encoding != "cbor" || s.ServerTransport.Type != "mcp-flow" {
			v.fail(key+"initialize", "%s: encoding %q, server transport %+v; want cbor", name, s.Encoding, s.ServerTransport)
		}
		if len(s.Tools) < 6 {
			v.fail(key+"tools/list", "%s: tools/list gave %v", name, s.Tools)
		}
		if want := "こんにちは from SDK " + s.Version; s.Echo != want {
			v.fail(key+"echo", "%s: echo %q, want %q", name, s.Echo, want)
		}
		g := s.Generate
		if g.Bytes != r.size || g.SHA256 != demotools.GenerateSHA256(r.size) || g.Reported != g.SHA256 || !strings.HasPrefix(g.Link, "mcp-flow://stream/") {
			v.fail(key+"stream", "%s: generate through transport.stream(): %+v, want %d bytes with SHA-256 %s", name, g, r.size, demotools.GenerateSHA256(r.size))
		} else {
			t.Logf("%s: %d MiB through transport.stream() in %d ms", name, g.Bytes>>20, g.Ms)
		}
		if in := s.Inline; in.Bytes != 1000 || in.SHA256 != in.Reported || in.SHA256 != demotools.GenerateSHA256(1000) {
			v.fail(key+"inline", "%s: inlined blob %+v", name, in)
		}
		p := s.Progress
		if len(p.Updates) == 0 || p.Updates[len(p.Updates)-1] != [2]float64{5, 5} || p.Datagrams == 0 {
			v.fail(key+"progress", "%s: progress %+v: want updates up to 5 of 5, some by datagram", name, p)
		}

		// Cancel: the SDK's call rejects with the abort's reason; the
		// server's -32800 comes back and the SDK reports no stray answer.
		if c := s.Cancel; c.Error == nil || !strings.Contains(*c.Error, "the user pressed Stop") || c.Answered == nil || *c.Answered != -32800 {
			v.fail(key+"cancel", "%s: the aborted call ended with %v; want a rejection with the abort's reason, and the server's -32800 received", name, c)
		} else {
			t.Logf("%s: the aborted call rejected in %d ms: %s", name, c.Ms, *c.Error)
		}
		if !slices.Contains(s.Sent, "$/cancel") || slices.Contains(s.Sent, "notifications/cancelled") {
			v.fail(key+"cancel", "%s: methods sent %v: the abort must go as $/cancel, not notifications/cancelled", name, s.Sent)
		}
		if len(s.Errors) != 0 {
			v.fail(key+"cancel", "%s: the SDK reported errors: %q (a -32800 passed on after the SDK gave up on its call?)", name, s.Errors)
		}

		// A failed stream fails its call, rather than leaving it to hang: the
		// page gives each call 15 s (within), a hang guard; measured 2-154
		// ms with the 2-core machine at load 10 (2026-12-06), and 1002 ms
		// once under two suites side by side. How fast is make bench's.
		failed := func(what string, c callError) {
			t.Helper()
			want := fmt.Sprintf("execution stream 1 of request %d failed: %s", c.ID, demotools.ErrMidstream)
			if c.Error == nil || !strings.Contains(*c.Error, want) {
				v.fail(key+"stream-error", "%s: %s: %v; want a rejection saying %q", name, what, c, want)
			} else {
				t.Logf("%s: %s rejected in %d ms: %s", name, what, c.Ms, *c.Error)
			}
		}
		failed("fail_midstream of 1000 bytes", s.FailMidstream)
		judgeIncoming(v, engine, key+"stream-error", s.FailMidstream)
		if s.FailLate != nil {
			failed("fail_midstream of 2 MiB", *s.FailLate)
		}

		// resources/read of a stream's URI.
		if rr := s.ReadResource; rr.Error != nil || rr.Timeout || rr.Bytes != readSize || rr.SHA256 != demotools.GenerateSHA256(readSize) || rr.Reported != rr.SHA256 || rr.MimeType != "application/octet-stream" {
			v.fail(key+"resources/read", "%s: readResource: %+v, want %d bytes with SHA-256 %s", name, rr, readSize, demotools.GenerateSHA256(readSize))
		}

		// Audio datagrams: byte-exact chunks of the tone, about its request.
		tone := s.Tone
		pcm := demotools.TonePCM(tone.Result.Ms, 440, tone.Result.SampleRate)
		chunk := demotools.ToneChunkBytes(tone.Result.SampleRate)
		if tone.Result.Format != demotools.ToneFormat || tone.Result.Chunks == 0 || len(tone.Chunks) < tone.Result.Chunks/2 || tone.AudioDatagrams != len(tone.Chunks) {
			v.fail(key+"audio", "%s: tone %+v: %d audio events, %d datagrams counted; want most of its chunks", name, tone.Result, len(tone.Chunks), tone.AudioDatagrams)
		}
		n := 0
		for _, c := range tone.Chunks {
			n += len(c.Data)
			off := c.Seq * chunk
			if c.RequestID != tone.ID || off+len(c.Data) > len(pcm) || !bytes.Equal(c.Data, pcm[off:off+len(c.Data)]) {
				v.fail(key+"audio", "%s: audio chunk seq %d of request %d (%d bytes) is not tone's (request %d)", name, c.Seq, c.RequestID, len(c.Data), tone.ID)
				break
			}
		}
		if n != tone.AudioBytes {
			v.fail(key+"audio", "%s: stats.audioBytes %d, the chunks hold %d", name, tone.AudioBytes, n)
		}
		t.Logf("%s: %d of %d audio chunks", name, len(tone.Chunks), tone.Result.Chunks)

		// Log datagrams: onlog, and the SDK's notifications/message.
		lg := s.Log
		if !lg.DatagramsSupported || len(lg.Events) == 0 || lg.LogDatagrams != len(lg.Events) || lg.SDK != len(lg.Events) {
			v.fail(key+"log", "%s: log: %d onlog events, %d log datagrams counted, %d notifications/message in the SDK; want them equal and not 0", name, len(lg.Events), lg.LogDatagrams, lg.SDK)
		}
		for _, e := range lg.Events {
			if e.RequestID == nil || *e.RequestID != lg.ID || e.Level != "warning" || e.Logger != demotools.LogLogger || e.Data != "disk 91% full" || !e.Datagram {
				v.fail(key+"log", "%s: log event %+v; want warning from %s about request %d by datagram", name, e, demotools.LogLogger, lg.ID)
				break
			}
		}
		t.Logf("%s: %d of 20 log datagrams", name, len(lg.Events))

		if want := "the browser answers: what is MCP-Flow?"; !strings.Contains(s.Sampling, want) {
			v.fail(key+"sampling", "%s: ask_sampling gave %q, want the client's handler's %q", name, s.Sampling, want)
		}
		if !s.Closed {
			v.fail(key+"close", "%s: onclose not called after client.close()", name)
		}
		// Not the 3 s wait for the server: 2.5-46 ms measured with the
		// 2-core machine at load 10 (2026-12-06).
		if s.LeftUnread != 1 || s.CloseMs >= 2500 {
			v.fail(key+"close", "%s: close() with %d result streams left unread took %.1f ms; want it under its 3 s wait for the server (2.5 s)", name, s.LeftUnread, s.CloseMs)
		} else {
			t.Logf("%s: close() took %.1f ms", name, s.CloseMs)
		}
	}

	// Text through resources/read, and a stream past readResourceLimit.
	if rt := res.V2.ReadText; rt == nil || rt.Error != nil || rt.HasBlob || !strings.HasPrefix(rt.MimeType, "text/plain") || rt.SHA256 != hex.EncodeToString(textSum[:]) {
		v.fail("transport.read-text", "SDK v2: readResource of a text stream: %+v; want text/plain text with SHA-256 %x", rt, textSum)
	}
	if tl := res.V2.TooLarge; tl == nil || tl.Error == nil || !strings.Contains(*tl.Error, "readResourceLimit") || !strings.Contains(*tl.Error, "transport.stream(") ||
		tl.Streamed == nil || tl.Streamed.Bytes != bigSize || tl.Streamed.SHA256 != demotools.GenerateSHA256(bigSize) || tl.Streamed.Counted != bigSize {
		v.fail("transport.read-limit", "SDK v2: readResource past its limit: %v; want an error naming readResourceLimit and transport.stream(), then all %d bytes through stream(), counted once in stats.streamBytes", tl, bigSize)
	}

	for what, fatal := range map[string]string{"raw": res.Raw.Fatal, "phantom": res.Phantom.Fatal, "unread": res.Unread.Fatal} {
		if fatal != "" {
			v.fail("transport.parts", "the page's %s part failed: %s", what, fatal)
		}
	}
	// transport.stream() of a failed stream errors, naming it, rather than
	// hanging (the page's 15 s within is the guard, as for the calls above).
	for _, c := range []callError{res.Raw.Stream, res.Raw.Late} {
		if c.Error == nil || !strings.Contains(*c.Error, "MCPFlowError") || !strings.Contains(*c.Error, demotools.ErrMidstream.Error()) || c.RequestID == nil || c.StreamTag == nil || *c.StreamTag != 1 {
			v.fail("transport.stream-error", "transport.stream() of a failed stream: %v; want an MCPFlowError with the request id, tag 1 and the server's reason", c)
		}
	}
	judgeIncoming(v, engine, "transport.stream-error", res.Raw.Stream)
	if engine == "deno" {
		for _, c := range streamErrorChecks {
			v.known(c, denoResetBug)
		}
	}
	// A ref/stream without its stream: -32001 after streamWait.
	// Not before streamWait (the rule), and a hang guard of 10 s past it.
	if p := res.Phantom; p.Error == nil || !strings.Contains(*p.Error, "no execution stream arrived for ref/stream tag 7") || p.Ms < p.StreamWait || p.Ms > p.StreamWait+10000 {
		v.fail("transport.phantom-ref", "phantom_stream: %v; want -32001 naming tag 7 after streamWait (%d ms)", p, p.StreamWait)
	}
	// Unread streams are cancelled after unreadStreamTimeout.
	u := res.Unread
	if l := u.Later; l.Error != nil || l.Timeout || l.Bytes != 20_000_000 || l.SHA256 != l.Reported || l.Ms > 10000 {
		v.fail("transport.unread", "a 20 MB stream after %d unread 64 MiB streams: %+v; want it whole well before the server's 30 s stall timeout", u.Links, l)
	} else {
		t.Logf("a 20 MB stream after %d unread 64 MiB streams (unreadStreamTimeout %d ms): %d ms", u.Links, u.Timeout, l.Ms)
	}
	if a := u.Again; a.Error == nil || !strings.Contains(*a.Error, "unreadStreamTimeout") || u.Released < 4 {
		v.fail("transport.unread", "stream() of an unread stream %d ms after its handover (unreadStreamTimeout %d ms): %v (%d released); want an error naming unreadStreamTimeout", u.AgainAfterMs, u.Timeout, a, u.Released)
	}

	mu.Lock()
	if len(cancelled) != 2 || !strings.Contains(strings.Join(cancelled, "|"), "the user pressed Stop") {
		v.fail("transport.cancel", "server handlers cancelled: %q; want both SDKs' aborts as $/cancel with their reason", cancelled)
	}
	mu.Unlock()
	if e := res.BadHash.Error; e == nil || !strings.Contains(*e, "serverCertificateHashes") {
		v.fail("transport.cert-hash", "a wrong certificate hash: %v; want a failure naming serverCertificateHashes", e)
	}
	// close() ends the session with $/shutdown: the server holds none.
	deadline := time.Now().Add(5 * time.Second)
	for srv.Sessions() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := srv.Sessions(); n != 0 {
		v.fail("transport.close", "%d sessions still open after both clients closed", n)
	}
	judged = true
	if t.Failed() {
		for _, r := range []*sdkRun{&res.V2, &res.V1} {
			for i := range r.Tone.Chunks {
				r.Tone.Chunks[i].Data = nil // the PCM, checked above
			}
		}
		b, _ := json.MarshalIndent(res, "", "  ")
		t.Logf("page result:\n%s", b)
	}
}
