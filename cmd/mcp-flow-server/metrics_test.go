package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestMetricsFlag (issue 27): with -metrics 127.0.0.1:0 the server serves
// /metrics on a listener of its own and says where in its log; after a
// known workload the counts there are exactly the workload's:
//   - a CONNECT from an Origin that is not allowed (refused, 403);
//   - an MCP-Flow session: 3 echo calls, a call of an unknown tool
//     (-32602), generate (a 100000-byte execution stream), fail_midstream
//     (1000 bytes, then a reset), progress_burst (20 progress updates, as
//     datagrams), tone (5 audio datagrams), a slow call cancelled after
//     500 ms; then a clean shutdown;
//   - one 2026-07-28 Streamable HTTP POST over TCP (tools/call echo), which
//     the in-process front carries on an MCP-Flow session of its own (role
//     client) to the server (role server), after a tools/list of its own
//     (to check the POST's Mcp-Param-* headers).
//
// Once the workload is over, no execution stream is open
// (mcpflow_streams_open is 0 in every series) and no upstream process runs.
//
// The public port serves no /metrics, over TCP or HTTP/3.
func TestMetricsFlag(t *testing.T) {
	url, hash, stderr, srv := runServer(t, buildServer(t), "-metrics", "127.0.0.1:0")
	metricsAt := metricsURL(t, stderr)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	tlsConf := flowtest.PinnedTLS(t, hash)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The public port: no /metrics on TCP (HTTP/2) nor on UDP (HTTP/3).
	// (Each client its own TLS config: the transports set its NextProtos.)
	web := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: flowtest.PinnedTLS(t, hash), ForceAttemptHTTP2: true}}
	defer web.CloseIdleConnections()
	h3 := &http3.Transport{TLSClientConfig: flowtest.PinnedTLS(t, hash)}
	defer h3.Close()
	for _, c := range []*http.Client{web, {Timeout: 20 * time.Second, Transport: h3}} {
		resp, err := c.Get("https://" + u.Host + metricsPath)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(b), "mcpflow_") {
			t.Fatalf("GET %s on the public port over %s: %d %.200s, want 404", metricsPath, resp.Proto, resp.StatusCode, b)
		}
	}

	// A CONNECT from an Origin the server does not allow.
	if s, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet,
		Header: http.Header{"Origin": {"https://evil.example"}}}); err == nil {
		s.Close()
		t.Fatal("a CONNECT from https://evil.example was accepted")
	}

	s, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet})
	if err != nil {
		t.Fatalf("Dial: %v; server stderr:\n%s", err, stderr)
	}
	defer s.Close()
	call := func(name string, args any, opts ...flow.CallOption) (*flow.Response, error) {
		return s.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": args}, opts...)
	}
	for range 3 {
		if _, err := call("echo", map[string]string{"text": "x"}); err != nil {
			t.Fatalf("echo: %v", err)
		}
	}
	if _, err := call("no_such_tool", map[string]string{}); err == nil {
		t.Fatal("a call of an unknown tool succeeded")
	}
	readStream := func(name string, n int) (int, error) {
		r, err := call(name, map[string]int{"bytes": n})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(r.Refs) != 1 {
			t.Fatalf("%s: refs %+v, want one execution stream", name, r.Refs)
		}
		sr, err := r.Stream(ctx, r.Refs[0].StreamTag)
		if err != nil { // a stream that failed already
			return 0, err
		}
		b, err := io.ReadAll(sr)
		return len(b), err
	}
	if n, err := readStream("generate", 100000); n != 100000 || err != nil {
		t.Fatalf("generate: %d bytes, %v; want 100000", n, err)
	}
	if _, err := readStream("fail_midstream", 1000); err == nil {
		t.Fatal("fail_midstream: the stream ended without an error")
	}
	if _, err := call("progress_burst", map[string]int{"count": 20}, flow.WithProgress(func(flow.Progress) {})); err != nil {
		t.Fatalf("progress_burst: %v", err)
	}
	if _, err := call("tone", map[string]int{"ms": 100}); err != nil { // 5 audio datagrams of 20 ms
		t.Fatalf("tone: %v", err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = s.Call(cctx, "tools/call", map[string]any{"name": "slow", "arguments": map[string]int{"steps": 100, "delayMs": 100}})
	ccancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow call cancelled after 500 ms: %v, want its deadline", err)
	}
	if err := s.Shutdown(ctx, "done"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	post := poster(t, web, url, 2, `h3=":`+u.Port()+`"`, stderr)
	if r, body := post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}); r.StatusCode != http.StatusOK || !strings.Contains(body, `"text":"hi"`) {
		t.Fatalf("a 2026-07-28 tools/call echo: %d %.300s, want hi", r.StatusCode, body)
	}

	want := map[string]float64{
		`mcpflow_refusals_total{reason="origin"}`: 1,

		`mcpflow_sessions_total{role="server"}`:                 2, // the MCP-Flow client's, the front's
		`mcpflow_sessions_total{role="client"}`:                 1, // the front's
		`mcpflow_sessions_open{role="server"}`:                  1, // the front's, until its client is idle
		`mcpflow_sessions_open{role="client"}`:                  1,
		`mcpflow_sessions_closed_total{code="0",role="server"}`: 1,
		`mcpflow_session_duration_seconds_count{role="server"}`: 1,

		`mcpflow_requests_total{direction="in",method="tools/call",outcome="ok",role="server"}`:        8, // 3 echo, generate, fail_midstream, progress_burst, tone, the POST's echo
		`mcpflow_requests_total{direction="in",method="tools/call",outcome="error",role="server"}`:     1,
		`mcpflow_requests_total{direction="in",method="tools/call",outcome="cancelled",role="server"}`: 1,
		`mcpflow_requests_total{direction="out",method="tools/call",outcome="ok",role="client"}`:       1,
		`mcpflow_request_duration_seconds_count{direction="in",method="tools/call",role="server"}`:     10,
		`mcpflow_request_duration_seconds_count{direction="out",method="tools/call",role="client"}`:    1,
		// The front learns the tools' x-mcp-header arguments before it
		// checks the POST's Mcp-Param-* headers: one tools/list of its own
		// (docs/spec.md §11.6).
		`mcpflow_requests_total{direction="in",method="tools/list",outcome="ok",role="server"}`:     1,
		`mcpflow_requests_total{direction="out",method="tools/list",outcome="ok",role="client"}`:    1,
		`mcpflow_request_duration_seconds_count{direction="in",method="tools/list",role="server"}`:  1,
		`mcpflow_request_duration_seconds_count{direction="out",method="tools/list",role="client"}`: 1,
		`mcpflow_cancels_total{direction="in",role="server"}`:                                       1,

		// Every execution stream that opened has ended: the gauge is 0 in
		// each of its series (exact below: no other series may be non-zero).
		`mcpflow_streams_open{direction="out",role="server"}`:                  0,
		`mcpflow_streams_total{direction="out",outcome="ok",role="server"}`:    1,
		`mcpflow_streams_total{direction="out",outcome="reset",role="server"}`: 1,
		`mcpflow_stream_bytes_total{direction="out",role="server"}`:            101000,
		`mcpflow_stream_resets_total{code="-32603",role="server"}`:             1,

		`mcpflow_http_requests_total{code="200",era="2026-07-28",method="POST"}`: 1,

		`mcpflow_upstream_processes`: 0, // no -upstream: none ever started

		`mcpflow_datagrams_total{channel="audio",direction="out",outcome="sent",role="server"}`: 5,
	}
	// Every series of these families is in want, with its value.
	exact := []string{"mcpflow_refusals_total", "mcpflow_sessions_total", "mcpflow_sessions_open",
		"mcpflow_sessions_closed_total", "mcpflow_session_duration_seconds_count", "mcpflow_requests_total",
		"mcpflow_request_duration_seconds_count", "mcpflow_cancels_total", "mcpflow_streams_open", "mcpflow_streams_total",
		"mcpflow_stream_bytes_total", "mcpflow_stream_resets_total", "mcpflow_http_requests_total",
		"mcpflow_upstream_starts_total", "mcpflow_upstream_processes"}
	got := waitForSeries(t, metricsAt, want, exact)
	// Each of the 20 progress updates was sent, superseded by the next
	// before it left, or dropped once its request was answered, except the
	// last one when it was still waiting as the answer came: that one goes
	// on the control stream, ahead of the answer (spec §6.2), and is no
	// datagram. So 19 or 20, by timing.
	var progress float64
	for k, v := range got {
		if family(k) != "mcpflow_datagrams_total" || strings.Contains(k, `channel="audio"`) {
			continue
		}
		if !strings.Contains(k, `channel="progress",direction="out"`) || !strings.Contains(k, `role="server"`) || strings.Contains(k, `outcome="received"`) {
			t.Errorf("%s %v: no such datagram in the workload", k, v)
		}
		progress += v
	}
	if progress != 19 && progress != 20 {
		var lines []string
		for k, v := range got {
			if strings.HasPrefix(k, "mcpflow_datagrams_total") || strings.HasPrefix(k, "mcpflow_control_frames_total") {
				lines = append(lines, fmt.Sprintf("%s %v", k, v))
			}
		}
		slices.Sort(lines)
		t.Errorf("progress datagrams sent, superseded or dropped: %v, want 19 or 20:\n  %s", progress, strings.Join(lines, "\n  "))
	}
	for _, dir := range []string{"in", "out"} {
		for _, role := range []string{"server", "client"} {
			var n float64
			for k, v := range got {
				if family(k) == "mcpflow_control_frame_bytes_total" && strings.Contains(k, `direction="`+dir+`"`) && strings.Contains(k, `role="`+role+`"`) {
					n += v
				}
			}
			if n == 0 {
				t.Errorf("no control frame bytes %s, role %s", dir, role)
			}
		}
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := got[name]; !ok {
			t.Errorf("no %s: the Go and process collectors are missing", name)
		}
	}
	select {
	case err := <-srv.signal(syscall.SIGTERM):
		if err != nil || !strings.Contains(stderr.String(), "shut down cleanly") {
			t.Fatalf("server exit after SIGTERM: %v, want 0 after a clean drain; stderr:\n%s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("server still running 20 s after SIGTERM; stderr:\n%s", stderr)
	}
}

// TestMetricsFlagBadAddress: a -metrics address that cannot be listened on
// ends the server before it serves anything, with exit code 1.
func TestMetricsFlagBadAddress(t *testing.T) {
	if code := run([]string{"-addr", "127.0.0.1:0", "-cert-dir", t.TempDir(), "-metrics", "127.0.0.1:99999"}); code != 1 {
		t.Fatalf("-metrics 127.0.0.1:99999: exit %d, want 1", code)
	}
}

// metricsURLPattern finds the -metrics listener's URL in the server's log.
var metricsURLPattern = regexp.MustCompile(`metrics=(http://\S+/metrics)`)

// metricsURL is the URL of the -metrics listener, from the server's log.
// The line is written before the server announces its own URL on stdout.
func metricsURL(t *testing.T, stderr *flowtest.SyncBuffer) string {
	t.Helper()
	// The server logs it before its stdout announcement, but the log reaches
	// stderr's buffer through another goroutine (seen missing under load).
	text, _ := stderr.Wait(30*time.Second, metricsURLPattern.MatchString)
	m := metricsURLPattern.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no metrics=URL in the server's log after 30 s:\n%s", text)
	}
	return m[1]
}

// scrape reads the series of a /metrics endpoint: "name{labels}" (as the
// text format writes them) to value.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	series := map[string]float64{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			return nil, fmt.Errorf("a line of %s that is no sample: %q", url, line)
		}
		series[line[:i]] = v
	}
	return series, nil
}

// family is the name of a series.
func family(series string) string {
	if i := strings.IndexByte(series, '{'); i >= 0 {
		return series[:i]
	}
	return series
}

// diffSeries lists how got departs from want, in the families exact: a
// series of want missing or with another value, and a series of got that
// want does not name (an emission too many). Series of want outside exact
// are checked too.
func diffSeries(got, want map[string]float64, exact []string) []string {
	var diffs []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s missing, want %v", k, w))
		} else if g != w {
			diffs = append(diffs, fmt.Sprintf("%s %v, want %v", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && slices.Contains(exact, family(k)) && g != 0 {
			diffs = append(diffs, fmt.Sprintf("%s %v, want none", k, g))
		}
	}
	slices.Sort(diffs)
	return diffs
}

// waitForSeries scrapes url until its series match want (diffSeries), for
// up to 10 s (the server's side of a session ends a moment after the
// client's), and returns the last scrape; past that the test fails with
// the differences.
func waitForSeries(t *testing.T, url string, want map[string]float64, exact []string) map[string]float64 {
	t.Helper()
	start := time.Now()
	deadline := start.Add(10 * time.Second)
	for {
		got, err := scrape(url)
		if err != nil {
			t.Fatal(err)
		}
		diffs := diffSeries(got, want, exact)
		if len(diffs) == 0 {
			t.Logf("the metrics matched the workload after %v", time.Since(start).Round(time.Millisecond))
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metrics at %s depart from the workload's counts:\n  %s", url, strings.Join(diffs, "\n  "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDiffSeries: the check of TestMetricsFlag catches a wrong count, a
// missing emission and an emission too many.
func TestDiffSeries(t *testing.T) {
	want := map[string]float64{`a_total{x="1"}`: 3, `b_total`: 1}
	got := map[string]float64{`a_total{x="1"}`: 4, `a_total{x="2"}`: 1, `a_total{x="3"}`: 0, `c_total`: 9}
	wantDiffs := []string{`a_total{x="1"} 4, want 3`, `a_total{x="2"} 1, want none`, `b_total missing, want 1`}
	if d := diffSeries(got, want, []string{"a_total", "b_total"}); !slices.Equal(d, wantDiffs) {
		t.Fatalf("diffSeries = %q, want %q", d, wantDiffs)
	}
	if d := diffSeries(want, want, []string{"a_total", "b_total"}); len(d) != 0 {
		t.Fatalf("diffSeries of equal series = %q", d)
	}
}
