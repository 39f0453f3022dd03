package metrics

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
)

// events is a known workload of both roles, with values past every label's
// set (an unknown method, close code, reset code, channel, outcome,
// encoding, refusal reason, HTTP method, era and status).
var events = []flow.Event{
	{Kind: flow.EventSessionOpen, Server: true},
	{Kind: flow.EventSessionOpen, Server: true},
	{Kind: flow.EventSessionClose, Server: true, CloseCode: flow.CloseOK, Duration: 90 * time.Second, Reason: "bye"},
	{Kind: flow.EventSessionOpen},
	{Kind: flow.EventSessionClose, CloseCode: 0x107, Duration: 2 * time.Second},

	{Kind: flow.EventRequest, Server: true, Inbound: true, Method: "tools/call", Outcome: "ok", Duration: 3 * time.Millisecond, ID: "1"},
	{Kind: flow.EventRequest, Server: true, Inbound: true, Method: "tools/call", Outcome: "ok", Duration: 3 * time.Millisecond, ID: "2"},
	{Kind: flow.EventRequest, Server: true, Inbound: true, Method: "tools/call", Outcome: "ok", Duration: 3 * time.Millisecond, ID: "3"},
	{Kind: flow.EventRequest, Server: true, Inbound: true, Method: "tools/call", Outcome: "error", Code: -32602, Duration: time.Millisecond},
	{Kind: flow.EventRequest, Server: true, Inbound: true, Method: "tools/call", Outcome: "cancelled", Code: -32800, Duration: 400 * time.Millisecond},
	{Kind: flow.EventRequest, Server: true, Method: "sampling/createMessage", Outcome: "ok", Duration: 2 * time.Second},
	{Kind: flow.EventRequest, Method: "acme/secret-plan", Outcome: "ok", Duration: 20 * time.Second},

	{Kind: flow.EventCancel, Server: true, Inbound: true, Method: "tools/call"},
	{Kind: flow.EventCancel, Method: "tools/call"},

	// Four streams open; three end, the server's tag 4 is open still.
	{Kind: flow.EventStreamOpen, Server: true, Tag: 1},
	{Kind: flow.EventStreamOpen, Server: true, Tag: 2},
	{Kind: flow.EventStreamOpen, Inbound: true, Tag: 3},
	{Kind: flow.EventStreamOpen, Server: true, Tag: 4},
	{Kind: flow.EventStream, Server: true, Outcome: "ok", Bytes: 100000, Tag: 1},
	{Kind: flow.EventStream, Server: true, Outcome: "reset", Code: -32603, Bytes: 1000, Tag: 2},
	{Kind: flow.EventStream, Inbound: true, Outcome: "reset", Code: 99, Bytes: 5, Tag: 3},

	{Kind: flow.EventDatagram, Server: true, Channel: 1, Outcome: "sent"},
	{Kind: flow.EventDatagram, Server: true, Channel: 1, Outcome: "sent"},
	{Kind: flow.EventDatagram, Server: true, Channel: 1, Outcome: "superseded"},
	{Kind: flow.EventDatagram, Server: true, Channel: 2, Outcome: "dropped"},
	{Kind: flow.EventDatagram, Server: true, Inbound: true, Channel: 9, Outcome: "received"},
	{Kind: flow.EventDatagram, Inbound: true, Channel: 3, Outcome: "lost in space"},

	{Kind: flow.EventControl, Server: true, Inbound: true, Encoding: codec.JSON, Bytes: 40},
	{Kind: flow.EventControl, Server: true, Encoding: codec.JSON, Bytes: 100},
	{Kind: flow.EventControl, Server: true, Encoding: codec.CBOR, Bytes: 60},
	{Kind: flow.EventControl, Server: true, Encoding: codec.CBOR, Bytes: 60},
	{Kind: flow.EventControl, Encoding: "msgpack", Bytes: 10},

	{Kind: flow.EventRefused, Server: true, Outcome: "origin", Reason: "https://evil.example"},
	{Kind: flow.EventRefused, Server: true, Outcome: "origin"},
	{Kind: flow.EventRefused, Server: true, Outcome: "initialize"},
	{Kind: flow.EventRefused, Server: true, Outcome: "because"},

	{Kind: flow.EventUpstreamStart, Server: true, Outcome: "start"},
	{Kind: flow.EventUpstreamStart, Server: true, Outcome: "start"},
	{Kind: flow.EventUpstreamStart, Server: true, Outcome: "restart"},
	{Kind: flow.EventUpstreamExit, Server: true, Outcome: "exit", Code: 0},

	{Kind: flow.EventHTTPRequest, Server: true, Method: "POST", Outcome: "2026-07-28", Code: 200},
	{Kind: flow.EventHTTPRequest, Server: true, Method: "GET", Outcome: "2025", Code: 404},
	{Kind: flow.EventHTTPRequest, Server: true, Method: "PATCH", Outcome: "1999", Code: 999},

	{Kind: 200, Server: true, Method: "tools/call"}, // a kind of a later flow: ignored
}

// TestObserve feeds events and checks the exposition of every series of the
// package, exactly.
func TestObserve(t *testing.T) {
	m := New()
	for _, e := range events {
		m.Observe(e)
	}
	want := `
# HELP mcpflow_sessions_open MCP-Flow sessions READY now.
# TYPE mcpflow_sessions_open gauge
mcpflow_sessions_open{role="client"} 0
mcpflow_sessions_open{role="server"} 1
# HELP mcpflow_sessions_total MCP-Flow sessions that became READY.
# TYPE mcpflow_sessions_total counter
mcpflow_sessions_total{role="client"} 1
mcpflow_sessions_total{role="server"} 2
# HELP mcpflow_sessions_closed_total MCP-Flow sessions that ended, by close code (spec §8.2).
# TYPE mcpflow_sessions_closed_total counter
mcpflow_sessions_closed_total{code="0",role="server"} 1
mcpflow_sessions_closed_total{code="other",role="client"} 1
# HELP mcpflow_session_duration_seconds How long the MCP-Flow sessions that ended lasted.
# TYPE mcpflow_session_duration_seconds histogram
mcpflow_session_duration_seconds_bucket{role="client",le="0.1"} 0
mcpflow_session_duration_seconds_bucket{role="client",le="1"} 0
mcpflow_session_duration_seconds_bucket{role="client",le="10"} 1
mcpflow_session_duration_seconds_bucket{role="client",le="60"} 1
mcpflow_session_duration_seconds_bucket{role="client",le="300"} 1
mcpflow_session_duration_seconds_bucket{role="client",le="1800"} 1
mcpflow_session_duration_seconds_bucket{role="client",le="3600"} 1
mcpflow_session_duration_seconds_bucket{role="client",le="14400"} 1
mcpflow_session_duration_seconds_bucket{role="client",le="86400"} 1
mcpflow_session_duration_seconds_bucket{role="client",le="+Inf"} 1
mcpflow_session_duration_seconds_sum{role="client"} 2
mcpflow_session_duration_seconds_count{role="client"} 1
mcpflow_session_duration_seconds_bucket{role="server",le="0.1"} 0
mcpflow_session_duration_seconds_bucket{role="server",le="1"} 0
mcpflow_session_duration_seconds_bucket{role="server",le="10"} 0
mcpflow_session_duration_seconds_bucket{role="server",le="60"} 0
mcpflow_session_duration_seconds_bucket{role="server",le="300"} 1
mcpflow_session_duration_seconds_bucket{role="server",le="1800"} 1
mcpflow_session_duration_seconds_bucket{role="server",le="3600"} 1
mcpflow_session_duration_seconds_bucket{role="server",le="14400"} 1
mcpflow_session_duration_seconds_bucket{role="server",le="86400"} 1
mcpflow_session_duration_seconds_bucket{role="server",le="+Inf"} 1
mcpflow_session_duration_seconds_sum{role="server"} 90
mcpflow_session_duration_seconds_count{role="server"} 1
# HELP mcpflow_requests_total Requests answered, the peer's (in) or this side's calls (out), by method and outcome (ok, error, cancelled).
# TYPE mcpflow_requests_total counter
mcpflow_requests_total{direction="out",method="other",outcome="ok",role="client"} 1
mcpflow_requests_total{direction="in",method="tools/call",outcome="cancelled",role="server"} 1
mcpflow_requests_total{direction="in",method="tools/call",outcome="error",role="server"} 1
mcpflow_requests_total{direction="in",method="tools/call",outcome="ok",role="server"} 3
mcpflow_requests_total{direction="out",method="sampling/createMessage",outcome="ok",role="server"} 1
# HELP mcpflow_cancels_total Requests cancelled (spec §7.1), received (in) or sent (out).
# TYPE mcpflow_cancels_total counter
mcpflow_cancels_total{direction="in",role="server"} 1
mcpflow_cancels_total{direction="out",role="client"} 1
# HELP mcpflow_streams_open Execution streams open now (spec §5), written (out) or read (in).
# TYPE mcpflow_streams_open gauge
mcpflow_streams_open{direction="in",role="client"} 0
mcpflow_streams_open{direction="out",role="server"} 1
# HELP mcpflow_streams_total Execution streams that ended (spec §5), by direction and outcome (ok, reset).
# TYPE mcpflow_streams_total counter
mcpflow_streams_total{direction="in",outcome="reset",role="client"} 1
mcpflow_streams_total{direction="out",outcome="ok",role="server"} 1
mcpflow_streams_total{direction="out",outcome="reset",role="server"} 1
# HELP mcpflow_stream_bytes_total Payload bytes of the execution streams that ended.
# TYPE mcpflow_stream_bytes_total counter
mcpflow_stream_bytes_total{direction="in",role="client"} 5
mcpflow_stream_bytes_total{direction="out",role="server"} 101000
# HELP mcpflow_stream_resets_total Execution streams reset, by code as a JSON-RPC code (spec §5.4).
# TYPE mcpflow_stream_resets_total counter
mcpflow_stream_resets_total{code="-32603",role="server"} 1
mcpflow_stream_resets_total{code="other",role="client"} 1
# HELP mcpflow_datagrams_total Datagrams (spec §6) by channel and outcome (sent, received, dropped, superseded).
# TYPE mcpflow_datagrams_total counter
mcpflow_datagrams_total{channel="audio",direction="out",outcome="dropped",role="server"} 1
mcpflow_datagrams_total{channel="log",direction="in",outcome="other",role="client"} 1
mcpflow_datagrams_total{channel="other",direction="in",outcome="received",role="server"} 1
mcpflow_datagrams_total{channel="progress",direction="out",outcome="sent",role="server"} 2
mcpflow_datagrams_total{channel="progress",direction="out",outcome="superseded",role="server"} 1
# HELP mcpflow_control_frames_total Control stream frames (spec §3.1) by encoding.
# TYPE mcpflow_control_frames_total counter
mcpflow_control_frames_total{direction="in",encoding="cbor",role="client"} 0
mcpflow_control_frames_total{direction="in",encoding="json",role="client"} 0
mcpflow_control_frames_total{direction="in",encoding="other",role="client"} 0
mcpflow_control_frames_total{direction="in",encoding="protobuf",role="client"} 0
mcpflow_control_frames_total{direction="out",encoding="cbor",role="client"} 0
mcpflow_control_frames_total{direction="out",encoding="json",role="client"} 0
mcpflow_control_frames_total{direction="out",encoding="other",role="client"} 1
mcpflow_control_frames_total{direction="out",encoding="protobuf",role="client"} 0
mcpflow_control_frames_total{direction="in",encoding="cbor",role="server"} 0
mcpflow_control_frames_total{direction="in",encoding="json",role="server"} 1
mcpflow_control_frames_total{direction="in",encoding="other",role="server"} 0
mcpflow_control_frames_total{direction="in",encoding="protobuf",role="server"} 0
mcpflow_control_frames_total{direction="out",encoding="cbor",role="server"} 2
mcpflow_control_frames_total{direction="out",encoding="json",role="server"} 1
mcpflow_control_frames_total{direction="out",encoding="other",role="server"} 0
mcpflow_control_frames_total{direction="out",encoding="protobuf",role="server"} 0
# HELP mcpflow_control_frame_bytes_total Control stream bytes, length prefixes included (spec §3.1), by encoding.
# TYPE mcpflow_control_frame_bytes_total counter
mcpflow_control_frame_bytes_total{direction="in",encoding="cbor",role="client"} 0
mcpflow_control_frame_bytes_total{direction="in",encoding="json",role="client"} 0
mcpflow_control_frame_bytes_total{direction="in",encoding="other",role="client"} 0
mcpflow_control_frame_bytes_total{direction="in",encoding="protobuf",role="client"} 0
mcpflow_control_frame_bytes_total{direction="out",encoding="cbor",role="client"} 0
mcpflow_control_frame_bytes_total{direction="out",encoding="json",role="client"} 0
mcpflow_control_frame_bytes_total{direction="out",encoding="other",role="client"} 10
mcpflow_control_frame_bytes_total{direction="out",encoding="protobuf",role="client"} 0
mcpflow_control_frame_bytes_total{direction="in",encoding="cbor",role="server"} 0
mcpflow_control_frame_bytes_total{direction="in",encoding="json",role="server"} 40
mcpflow_control_frame_bytes_total{direction="in",encoding="other",role="server"} 0
mcpflow_control_frame_bytes_total{direction="in",encoding="protobuf",role="server"} 0
mcpflow_control_frame_bytes_total{direction="out",encoding="cbor",role="server"} 120
mcpflow_control_frame_bytes_total{direction="out",encoding="json",role="server"} 100
mcpflow_control_frame_bytes_total{direction="out",encoding="other",role="server"} 0
mcpflow_control_frame_bytes_total{direction="out",encoding="protobuf",role="server"} 0
# HELP mcpflow_refusals_total CONNECTs and sessions a server refused before READY, by reason.
# TYPE mcpflow_refusals_total counter
mcpflow_refusals_total{reason="initialize"} 1
mcpflow_refusals_total{reason="origin"} 2
mcpflow_refusals_total{reason="other"} 1
# HELP mcpflow_upstream_starts_total Upstream MCP server processes a bridge started (spec §10).
# TYPE mcpflow_upstream_starts_total counter
mcpflow_upstream_starts_total{kind="restart"} 1
mcpflow_upstream_starts_total{kind="start"} 2
# HELP mcpflow_upstream_processes Upstream MCP server processes running now (spec §10), until reaped.
# TYPE mcpflow_upstream_processes gauge
mcpflow_upstream_processes 2
# HELP mcpflow_http_requests_total Requests the Streamable HTTP front answered, by HTTP method, MCP era and status code.
# TYPE mcpflow_http_requests_total counter
mcpflow_http_requests_total{code="200",era="2026-07-28",method="POST"} 1
mcpflow_http_requests_total{code="404",era="2025",method="GET"} 1
mcpflow_http_requests_total{code="other",era="other",method="other"} 1
` + histogram("mcpflow_request_duration_seconds", "Time from a request's arrival (or sending) to its answer.", RequestBuckets, map[string][]float64{
		`direction="out",method="other",role="client"`:                  {20},
		`direction="in",method="tools/call",role="server"`:              {.003, .003, .003, .001, .4},
		`direction="out",method="sampling/createMessage",role="server"`: {2},
	})
	names := []string{"mcpflow_sessions_open", "mcpflow_sessions_total", "mcpflow_sessions_closed_total",
		"mcpflow_session_duration_seconds", "mcpflow_requests_total", "mcpflow_request_duration_seconds",
		"mcpflow_cancels_total", "mcpflow_streams_open", "mcpflow_streams_total", "mcpflow_stream_bytes_total", "mcpflow_stream_resets_total",
		"mcpflow_datagrams_total", "mcpflow_control_frames_total", "mcpflow_control_frame_bytes_total",
		"mcpflow_refusals_total", "mcpflow_upstream_starts_total", "mcpflow_upstream_processes", "mcpflow_http_requests_total"}
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	// No family of the package is left out of the check above.
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if n := mf.GetName(); strings.HasPrefix(n, "mcpflow_") && !slices.Contains(names, n) {
			t.Errorf("%s is not checked", n)
		}
	}
}

// TestObserveCountIsExact: one Event more or less than the workload, and
// the check of TestObserve fails, naming the series.
func TestObserveCountIsExact(t *testing.T) {
	m := New()
	for _, e := range events {
		m.Observe(e)
	}
	m.Observe(flow.Event{Kind: flow.EventRequest, Server: true, Inbound: true, Method: "tools/call", Outcome: "ok", Duration: time.Millisecond})
	err := testutil.GatherAndCompare(m.reg, strings.NewReader(`
# HELP mcpflow_requests_total Requests answered, the peer's (in) or this side's calls (out), by method and outcome (ok, error, cancelled).
# TYPE mcpflow_requests_total counter
mcpflow_requests_total{direction="out",method="other",outcome="ok",role="client"} 1
mcpflow_requests_total{direction="in",method="tools/call",outcome="cancelled",role="server"} 1
mcpflow_requests_total{direction="in",method="tools/call",outcome="error",role="server"} 1
mcpflow_requests_total{direction="in",method="tools/call",outcome="ok",role="server"} 3
mcpflow_requests_total{direction="out",method="sampling/createMessage",outcome="ok",role="server"} 1
`), "mcpflow_requests_total")
	if err == nil || !strings.Contains(err.Error(), `outcome="ok",role="server"} 4`) {
		t.Fatalf("a fourth ok tools/call against an expectation of 3: %v, want a difference naming 4", err)
	}
}

// TestHandler: the handler serves the package's series and the Go runtime's
// and the process's, in the text format.
func TestHandler(t *testing.T) {
	m := New()
	m.Observe(flow.Event{Kind: flow.EventRequest, Server: true, Inbound: true, Method: "ping", Outcome: "ok"})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("%d %s, want 200 and the text format", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, line := range []string{
		`mcpflow_requests_total{direction="in",method="ping",outcome="ok",role="server"} 1`,
		"# TYPE go_goroutines gauge",
		"# TYPE process_resident_memory_bytes gauge",
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("no line %q in:\n%.2000s", line, body)
		}
	}
}

// TestListenAndServe: the admin listener serves the metrics at GET /metrics
// and nothing else.
func TestListenAndServe(t *testing.T) {
	m := New()
	m.Observe(flow.Event{Kind: flow.EventRefused, Server: true, Outcome: "origin"})
	at, closeFn, err := m.ListenAndServe("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	for path, want := range map[string]int{Path: http.StatusOK, "/": http.StatusNotFound, "/mcp": http.StatusNotFound} {
		resp, err := http.Get("http://" + at.String() + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == http.StatusOK) != strings.Contains(string(b), `mcpflow_refusals_total{reason="origin"} 1`) {
			t.Errorf("GET %s: %d %.200s, want %d", path, resp.StatusCode, b, want)
		}
	}
	resp, err := http.Post("http://"+at.String()+Path, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %d, want 405", Path, resp.StatusCode)
	}
}

// TestObserveConcurrent: Observe from many goroutines while scraping (run
// with -race); every Event is counted.
func TestObserveConcurrent(t *testing.T) {
	m := New()
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				m.Observe(flow.Event{Kind: flow.EventRequest, Server: g%2 == 0, Method: "tools/call", Outcome: "ok"})
				m.Observe(flow.Event{Kind: flow.EventControl, Server: true, Encoding: codec.CBOR, Bytes: int64(i)})
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if _, err := m.reg.Gather(); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	if got := testutil.ToFloat64(m.requests.WithLabelValues("server", "out", "tools/call", "ok")); got != goroutines/2*each {
		t.Errorf("server requests %v, want %d", got, goroutines/2*each)
	}
	if got := testutil.ToFloat64(m.controlFrames.WithLabelValues("server", "out", "cbor")); got != goroutines*each {
		t.Errorf("control frames %v, want %d", got, goroutines*each)
	}
}

// TestNilMetrics: a nil *Metrics takes Events and counts nothing.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.Observe(flow.Event{Kind: flow.EventSessionOpen})
}

// TestMethod: a method is its own label only when MCP or MCP-Flow names it.
func TestMethod(t *testing.T) {
	for in, want := range map[string]string{"tools/call": "tools/call", "initialize": "initialize",
		"server/discover": "server/discover", "$/hello": "$/hello", "tools/call2": "other", "": "other",
		"notifications/progress": "other"} {
		if got := Method(in); got != want {
			t.Errorf("Method(%q) = %q, want %q", in, got, want)
		}
	}
}

// histogram is the text of a histogram family with the given observations
// per label set (labels as they sort, without le): the buckets cumulate.
func histogram(name, help string, buckets []float64, obs map[string][]float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	for labels, vs := range obs {
		sum := 0.0
		for _, v := range vs {
			sum += v
		}
		for _, le := range buckets {
			n := 0
			for _, v := range vs {
				if v <= le {
					n++
				}
			}
			fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %d\n", name, labels, strconv.FormatFloat(le, 'g', -1, 64), n)
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n%s_sum{%s} %s\n%s_count{%s} %d\n",
			name, labels, len(vs), name, labels, strconv.FormatFloat(sum, 'g', -1, 64), name, labels, len(vs))
	}
	return b.String()
}
