// Package metrics counts a process's flow.Events for Prometheus: sessions,
// requests, cancels, execution streams (open now, and ended), datagrams,
// control frames, refusals, upstream processes (started, and running now)
// and the Streamable HTTP front's requests, beside the Go runtime's and the
// process's own metrics.
//
// A Metrics has a registry of its own (never the global one): New makes it,
// Observe feeds it (hand it to flow.Hooks.Observe, bridge.HTTPConfig.Observe,
// bridge.StdioUpstreamConfig.Observe), Handler serves it in the Prometheus
// text format. mcp-flow-server serves it at /metrics on its -metrics
// listener, an admin port apart from the public one.
//
// Names follow Prometheus's conventions: the prefix mcpflow_, counters end
// in _total, durations are in seconds and sizes in bytes. Every label takes
// a bounded set of values, whatever a peer sends: a method MCP does not
// name, a close or reset code the spec does not define, and any other
// unknown value are counted under "other". Request ids, tool names and
// arguments, tokens and reasons are never labels.
package metrics

import (
	"errors"
	"log"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// Metrics holds the collectors of one process. Observe may be called from
// any goroutine, concurrently; it takes no lock that another Observe or a
// scrape holds for longer than a map lookup, and never waits for I/O, so it
// keeps flow.Hooks' rule that a hook must not block. A nil *Metrics
// ignores every Event.
type Metrics struct {
	reg *prometheus.Registry

	// sessionsOpen is mcpflow_sessions_open{role}: the sessions READY now
	// (EventSessionOpen less EventSessionClose).
	sessionsOpen *prometheus.GaugeVec
	// sessionsTotal is mcpflow_sessions_total{role}: the sessions that
	// became READY (spec §2).
	sessionsTotal *prometheus.CounterVec
	// sessionsClosed is mcpflow_sessions_closed_total{role,code}: the
	// sessions that ended, by close code (spec §8.2: "0" clean shutdown …
	// "8" peer stopped reading; "other" for a code the spec does not name).
	sessionsClosed *prometheus.CounterVec
	// sessionDuration is mcpflow_session_duration_seconds{role}: how long
	// the sessions that ended lasted.
	sessionDuration *prometheus.HistogramVec
	// requests is mcpflow_requests_total{role,direction,method,outcome}:
	// the requests answered, the peer's ("in": this side's handler answered
	// it, or the session refused it) or this side's own calls ("out"), with
	// outcome "ok", "error" (a JSON-RPC error answer) or "cancelled".
	requests *prometheus.CounterVec
	// requestDuration is
	// mcpflow_request_duration_seconds{role,direction,method}: from a
	// request's arrival (or sending) to its answer.
	requestDuration *prometheus.HistogramVec
	// cancels is mcpflow_cancels_total{role,direction}: the requests
	// cancelled ($/cancel or notifications/cancelled, spec §7.1), received
	// ("in") or sent ("out").
	cancels *prometheus.CounterVec
	// streamsOpen is mcpflow_streams_open{role,direction}: the execution
	// streams open now, written ("out") or read ("in"): EventStreamOpen less
	// EventStream (flow pairs them, and ends at a session's end each one
	// still open).
	streamsOpen *prometheus.GaugeVec
	// streams is mcpflow_streams_total{role,direction,outcome}: the
	// execution streams that ended (spec §5), read ("in") or written
	// ("out"), "ok" or "reset".
	streams *prometheus.CounterVec
	// streamBytes is mcpflow_stream_bytes_total{role,direction}: the
	// payload bytes of the execution streams that ended.
	streamBytes *prometheus.CounterVec
	// streamResets is mcpflow_stream_resets_total{role,code}: the execution
	// streams that ended with a reset, by its code as a JSON-RPC code
	// (spec §5.4).
	streamResets *prometheus.CounterVec
	// datagrams is mcpflow_datagrams_total{role,direction,channel,outcome}:
	// datagrams (spec §6) by channel ("progress", "audio", "log") and
	// outcome: "sent", "received", "dropped" (no room, or unreadable) or
	// "superseded" (a newer one replaced it before it left).
	datagrams *prometheus.CounterVec
	// controlFrames and controlBytes are
	// mcpflow_control_frames_total{role,direction,encoding} and
	// mcpflow_control_frame_bytes_total{role,direction,encoding}: the
	// control stream's frames and their bytes, 4-byte prefix included
	// (spec §3.1), by encoding (spec §4.4).
	controlFrames *prometheus.CounterVec
	controlBytes  *prometheus.CounterVec
	// refusals is mcpflow_refusals_total{reason}: a server's refusals of a
	// CONNECT or of a session before READY (flow.EventRefused): "origin",
	// "host", "sessions", "handshakes", "auth", "shutting-down", "upgrade",
	// "initialize".
	refusals *prometheus.CounterVec
	// upstreamStarts is mcpflow_upstream_starts_total{kind}: the upstream
	// processes a bridge started, kind "start" or "restart" (spec §10).
	upstreamStarts *prometheus.CounterVec
	// upstreamProcesses is mcpflow_upstream_processes: the upstream
	// processes running now, EventUpstreamStart less EventUpstreamExit
	// (a process counts until it is reaped).
	upstreamProcesses prometheus.Gauge
	// httpRequests is mcpflow_http_requests_total{method,era,code}: the
	// Streamable HTTP front's answers by HTTP method, MCP era ("2025" or
	// "2026-07-28") and status code.
	httpRequests *prometheus.CounterVec

	// control holds the children of controlFrames and controlBytes, the
	// busiest series, looked up once: [role][direction][encoding].
	control [2][2][len(encodings)]struct{ frames, bytes prometheus.Counter }
}

// Buckets of the histograms, in seconds.
var (
	// RequestBuckets spans a loopback ping to a five-minute tool call.
	RequestBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
	// SessionBuckets spans a one-call session to a day-long one.
	SessionBuckets = []float64{.1, 1, 10, 60, 300, 1800, 3600, 4 * 3600, 24 * 3600}
)

// New returns a Metrics with a registry of its own, holding the collectors
// of this package and the Go runtime's and the process's.
func New() *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		sessionsOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mcpflow_sessions_open",
			Help: "MCP-Flow sessions READY now."}, []string{"role"}),
		sessionsTotal: counter("mcpflow_sessions_total",
			"MCP-Flow sessions that became READY.", "role"),
		sessionsClosed: counter("mcpflow_sessions_closed_total",
			"MCP-Flow sessions that ended, by close code (spec §8.2).", "role", "code"),
		sessionDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcpflow_session_duration_seconds",
			Help: "How long the MCP-Flow sessions that ended lasted.", Buckets: SessionBuckets}, []string{"role"}),
		requests: counter("mcpflow_requests_total",
			"Requests answered, the peer's (in) or this side's calls (out), by method and outcome (ok, error, cancelled).", "role", "direction", "method", "outcome"),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcpflow_request_duration_seconds",
			Help: "Time from a request's arrival (or sending) to its answer.", Buckets: RequestBuckets}, []string{"role", "direction", "method"}),
		cancels: counter("mcpflow_cancels_total",
			"Requests cancelled (spec §7.1), received (in) or sent (out).", "role", "direction"),
		streamsOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mcpflow_streams_open",
			Help: "Execution streams open now (spec §5), written (out) or read (in)."}, []string{"role", "direction"}),
		streams: counter("mcpflow_streams_total",
			"Execution streams that ended (spec §5), by direction and outcome (ok, reset).", "role", "direction", "outcome"),
		streamBytes: counter("mcpflow_stream_bytes_total",
			"Payload bytes of the execution streams that ended.", "role", "direction"),
		streamResets: counter("mcpflow_stream_resets_total",
			"Execution streams reset, by code as a JSON-RPC code (spec §5.4).", "role", "code"),
		datagrams: counter("mcpflow_datagrams_total",
			"Datagrams (spec §6) by channel and outcome (sent, received, dropped, superseded).", "role", "direction", "channel", "outcome"),
		controlFrames: counter("mcpflow_control_frames_total",
			"Control stream frames (spec §3.1) by encoding.", "role", "direction", "encoding"),
		controlBytes: counter("mcpflow_control_frame_bytes_total",
			"Control stream bytes, length prefixes included (spec §3.1), by encoding.", "role", "direction", "encoding"),
		refusals: counter("mcpflow_refusals_total",
			"CONNECTs and sessions a server refused before READY, by reason.", "reason"),
		upstreamStarts: counter("mcpflow_upstream_starts_total",
			"Upstream MCP server processes a bridge started (spec §10).", "kind"),
		upstreamProcesses: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mcpflow_upstream_processes",
			Help: "Upstream MCP server processes running now (spec §10), until reaped."}),
		httpRequests: counter("mcpflow_http_requests_total",
			"Requests the Streamable HTTP front answered, by HTTP method, MCP era and status code.", "method", "era", "code"),
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.sessionsOpen, m.sessionsTotal, m.sessionsClosed, m.sessionDuration, m.requests, m.requestDuration,
		m.cancels, m.streamsOpen, m.streams, m.streamBytes, m.streamResets, m.datagrams, m.controlFrames, m.controlBytes,
		m.refusals, m.upstreamStarts, m.upstreamProcesses, m.httpRequests)
	for r, role := range roles {
		// The sessions of both roles show from the first scrape, at 0.
		m.sessionsOpen.WithLabelValues(role)
		m.sessionsTotal.WithLabelValues(role)
		for d, dir := range directions {
			for e, enc := range encodings {
				c := &m.control[r][d][e]
				c.frames = m.controlFrames.WithLabelValues(role, dir, enc)
				c.bytes = m.controlBytes.WithLabelValues(role, dir, enc)
			}
		}
	}
	return m
}

// Handler serves the registry in the Prometheus text format, for GET
// /metrics on an admin listener.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Path is where an admin listener serves the metrics (ListenAndServe).
const Path = "/metrics"

// ListenAndServe serves Handler at GET Path on a plain-HTTP listener of its
// own at addr, an admin port (never a public one: see the package doc),
// and returns the listener's address and close, which ends it. errorLog
// receives the HTTP server's errors (nil: the log package's default).
func (m *Metrics) ListenAndServe(addr string, errorLog *log.Logger) (net.Addr, func() error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 16 << 10, ErrorLog: errorLog}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && errorLog != nil {
			errorLog.Printf("metrics listener: %v", err)
		}
	}()
	return ln.Addr(), srv.Close, nil
}

// Observe counts one Event. It has the signature of flow.Hooks.Observe.
func (m *Metrics) Observe(e flow.Event) {
	if m == nil {
		return
	}
	role := roles[roleIndex(e.Server)]
	switch e.Kind {
	case flow.EventSessionOpen:
		m.sessionsOpen.WithLabelValues(role).Inc()
		m.sessionsTotal.WithLabelValues(role).Inc()
	case flow.EventSessionClose:
		m.sessionsOpen.WithLabelValues(role).Dec()
		m.sessionsClosed.WithLabelValues(role, closeCode(e)).Inc()
		m.sessionDuration.WithLabelValues(role).Observe(e.Duration.Seconds())
	case flow.EventRequest:
		method, dir := Method(e.Method), directions[dirIndex(e.Inbound)]
		m.requests.WithLabelValues(role, dir, method, oneOf(e.Outcome, "ok", "error", "cancelled")).Inc()
		m.requestDuration.WithLabelValues(role, dir, method).Observe(e.Duration.Seconds())
	case flow.EventCancel:
		m.cancels.WithLabelValues(role, directions[dirIndex(e.Inbound)]).Inc()
	case flow.EventStreamOpen:
		m.streamsOpen.WithLabelValues(role, directions[dirIndex(e.Inbound)]).Inc()
	case flow.EventStream:
		dir := directions[dirIndex(e.Inbound)]
		m.streamsOpen.WithLabelValues(role, dir).Dec()
		outcome := oneOf(e.Outcome, "ok", "reset")
		m.streams.WithLabelValues(role, dir, outcome).Inc()
		if e.Bytes > 0 {
			m.streamBytes.WithLabelValues(role, dir).Add(float64(e.Bytes))
		}
		if outcome == "reset" {
			m.streamResets.WithLabelValues(role, jsonrpcCode(e.Code)).Inc()
		}
	case flow.EventDatagram:
		m.datagrams.WithLabelValues(role, directions[dirIndex(e.Inbound)], channel(e.Channel),
			oneOf(e.Outcome, "sent", "received", "dropped", "superseded")).Inc()
	case flow.EventControl:
		c := &m.control[roleIndex(e.Server)][dirIndex(e.Inbound)][encodingIndex(e.Encoding)]
		c.frames.Inc()
		if e.Bytes > 0 {
			c.bytes.Add(float64(e.Bytes))
		}
	case flow.EventRefused:
		m.refusals.WithLabelValues(oneOf(e.Outcome, refusalReasons...)).Inc()
	case flow.EventUpstreamStart:
		m.upstreamStarts.WithLabelValues(oneOf(e.Outcome, "start", "restart")).Inc()
		m.upstreamProcesses.Inc()
	case flow.EventUpstreamExit:
		m.upstreamProcesses.Dec()
	case flow.EventHTTPRequest:
		m.httpRequests.WithLabelValues(oneOf(e.Method, httpMethods...), oneOf(e.Outcome, eras...), httpStatus(e.Code)).Inc()
	}
}

// other is the label value of whatever is not in a label's set.
const other = "other"

var (
	roles      = [2]string{"client", "server"}
	directions = [2]string{"out", "in"}
	// encodings are the control stream's encodings (spec §4.4), then other.
	encodings      = [...]string{string(codec.JSON), string(codec.CBOR), string(codec.Protobuf), other}
	refusalReasons = []string{"origin", "host", "sessions", "handshakes", "auth", "shutting-down", "upgrade", "initialize"}
	httpMethods    = []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodOptions, http.MethodHead}
	eras           = []string{"2025", protocol.MCP20260728}
)

func roleIndex(server bool) int {
	if server {
		return 1
	}
	return 0
}

func dirIndex(inbound bool) int {
	if inbound {
		return 1
	}
	return 0
}

func encodingIndex(n codec.Name) int {
	for i, e := range encodings[:len(encodings)-1] {
		if string(n) == e {
			return i
		}
	}
	return len(encodings) - 1
}

// oneOf is v if it is one of set, else "other".
func oneOf(v string, set ...string) string {
	for _, s := range set {
		if v == s {
			return s
		}
	}
	return other
}

// closeCode labels a session's close code: its number for the codes of
// spec §8.2 (0 to 8), else "other".
func closeCode(e flow.Event) string {
	if e.CloseCode <= flow.CloseStalled {
		return strconv.Itoa(int(e.CloseCode))
	}
	return other
}

// resetCodes are the JSON-RPC codes an execution stream's reset carries
// (spec §5.4, §8) that get a label of their own.
var resetCodes = map[int64]string{}

func init() {
	for _, c := range []int64{-32700, -32600, -32601, -32602, -32603, -32800, -32801,
		-32000, -32001, -32002, -32003, -32004, -32005, -32006,
		protocol.CodeHeaderMismatch, protocol.CodeUnsupportedProtocolVersion} {
		resetCodes[c] = strconv.FormatInt(c, 10)
	}
}

func jsonrpcCode(c int64) string {
	if s, ok := resetCodes[c]; ok {
		return s
	}
	return other
}

// channel labels a datagram channel (spec §6.1).
func channel(c uint8) string {
	switch c {
	case 1:
		return "progress"
	case 2:
		return "audio"
	case 3:
		return "log"
	}
	return other
}

// httpStatus labels an HTTP status code: its number from 100 to 599.
func httpStatus(c int64) string {
	if c >= 100 && c <= 599 {
		return strconv.FormatInt(c, 10)
	}
	return other
}

// Method is the label of a request's method: the method itself when MCP
// (2025-11-25 or 2026-07-28) or MCP-Flow names it, else "other", so that
// a peer cannot grow the series without bound.
func Method(m string) string {
	if knownMethods[m] {
		return m
	}
	return other
}

// knownMethods are the requests of MCP 2025-11-25 and 2026-07-28 and of
// MCP-Flow (notifications are never answered, so never counted).
var knownMethods = map[string]bool{
	protocol.MethodInitialize: true, protocol.MethodPing: true,
	"tools/list": true, "tools/call": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true,
	"completion/complete": true, "logging/setLevel": true,
	"sampling/createMessage": true, "roots/list": true, "elicitation/create": true,
	"tasks/get": true, "tasks/result": true, "tasks/list": true, "tasks/cancel": true,
	protocol.MethodDiscover: true, protocol.MethodHello: true,
}
