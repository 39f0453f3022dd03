package fallback

// This file is long because it is the stdio relay over the fallback's client
// in one piece: the host's lines in, the calls and cancels in flight, the
// server's messages out, and the bounded line reader.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	sdkrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-flow/mcp-flow/bridge/plainio"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// MaxLine bounds one line the relay reads from the host: the stdio
// front's bound on one message (plainio.MaxMessage, 64 MiB). A longer line
// is skipped as it is read (never held whole) and answered with a -32700
// error.
const MaxLine = plainio.MaxMessage

// Relay is the stdio front over Streamable HTTP (cmd/mcp-flow bridge stdio
// where Probe chose it): the host's own MCP session, relayed to the server
// at url (its TCP side: spec §10.1) by the go-sdk's client connection. The
// host speaks NDJSON JSON-RPC on in and out: each line from in is decoded
// and written to the connection (a request as its own POST, whose context
// ends when its answer came or the relay ends; notifications and the
// host's answers to the server in the order they came), and every message
// the connection reads becomes one line on out. The host's initialize (or
// server/discover) and protocol version pass through as it sent them: the
// server answers the host, not the relay.
//
// What the host gets differs from the stdio front over MCP-Flow:
//   - Execution streams arrive as the server's HTTP front made them (spec
//     §10): inline, or past its inline limit as a resource_link to a
//     download on the server's origin (https, with the server's
//     certificate), where the stdio front would have written a file and
//     linked it with a file:// URI. -inline-limit and -stream-dir do not
//     apply.
//   - No standalone GET stream: the go-sdk opens it only from a hook its
//     own client calls after initialize, which a relayed connection never
//     gets. Server messages outside a request's answer (list_changed
//     notifications, log messages between calls) are not received; those
//     inside an answer (progress, logs, the server's requests: sampling,
//     elicitation, roots) are, and the host's answers go back as POSTs.
//   - A host of the 2026-07-28 era (its requests' _meta name it) has no
//     session and no notifications over Streamable HTTP: its
//     notifications/cancelled ends the request's POST, which cancels the
//     request on the server, and its other notifications are dropped.
//   - NDJSON only (the go-sdk's stdio framing), no Content-Length framing
//     and no JSON-RPC batches (answered with -32600).
//   - A lost session (the server restarted: 404 for its id) ends the relay
//     with an error instead of a reconnection: the host's initialize cannot
//     be replayed for it.
//
// A line that is not JSON gets a -32700 error line on out, one that is
// JSON but not a JSON-RPC message -32600, a line over MaxLine -32700, and
// the relay goes on; a request whose POST fails gets an error response
// with its id. When in ends, the requests in flight are answered first;
// then the connection is closed (DELETE with the session id) and Relay
// returns nil. When ctx ends, or the session fails, it returns at once
// with why. The goroutine reading in ends when in does, and one blocked
// writing to out (a host that does not read) when that write returns.
func Relay(ctx context.Context, url string, cfg Config, in io.Reader, out io.Writer) error {
	log := cfg.Flow.Logger
	if log == nil {
		log = slog.Default()
	}
	hc := httpClient(cfg)
	vh := &versionHeader{base: hc.Transport}
	if vh.base == nil {
		vh.base = http.DefaultTransport
	}
	client := *hc
	client.Transport = vh
	// DisableStandaloneSSE states what happens anyway: the GET would be
	// opened from a hook of the go-sdk's client, never called here.
	conn, err := (&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &client, DisableStandaloneSSE: true}).Connect(ctx)
	if err != nil {
		return fmt.Errorf("fallback: Streamable HTTP %s: %w", url, err)
	}
	rctx, stop := context.WithCancel(ctx)
	r := &relay{conn: conn, log: log, version: vh, ctx: rctx, out: out, gone: make(chan struct{}),
		pending: map[any]context.CancelFunc{}, settled: make(chan struct{}, 1)}
	lost := make(chan error, 1)
	go func() { lost <- r.readServer() }()
	defer func() {
		_ = conn.Close() // DELETE; Read then returns
		stop()           // the POSTs still in flight
		r.writers.Wait()
		if cfg.HTTPClient == nil {
			hc.CloseIdleConnections()
		}
	}()
	return r.run(in, lost)
}

// relay is one host's session through Relay. The goroutine of run reads
// the host and writes notifications and answers; one goroutine per request
// writes it (a POST lasts until its answer's headers); readServer reads the
// connection. emit is the one way to out.
type relay struct {
	conn    mcp.Connection
	log     *slog.Logger
	version *versionHeader
	ctx     context.Context // ends when Relay returns
	writers sync.WaitGroup  // the request writers

	outMu    sync.Mutex
	out      io.Writer
	gone     chan struct{} // closed when a write to out failed
	goneErr  error
	goneOnce sync.Once

	mu      sync.Mutex
	pending map[any]context.CancelFunc // the host's requests in flight, by id.Raw(): each cancels its POST
	initID  any                        // the host's initialize, until answered
	// stateless: the host speaks 2026-07-28 (its last request's _meta
	// named it), not a session of initialize's.
	stateless atomic.Bool
	settled   chan struct{} // a request left pending (a wake-up, not a count)
}

type hostLine struct {
	b   []byte
	err error
}

func (r *relay) run(in io.Reader, lost <-chan error) error {
	lines := make(chan hostLine)
	quit := make(chan struct{})
	defer close(quit)
	go readHost(in, lines, quit)
	for {
		select {
		case l := <-lines:
			switch {
			case l.err == nil:
				r.fromHost(l.b)
			case errors.Is(l.err, plainio.ErrLineTooLong):
				r.hostError(jsonrpc.CodeParseError, fmt.Sprintf("a line longer than %d bytes was skipped", MaxLine))
			case l.err == io.EOF:
				return r.finish(lost)
			default:
				return fmt.Errorf("fallback: reading the host: %w", l.err)
			}
		case err := <-lost:
			return sessionLost(err)
		case <-r.gone:
			return r.goneErr
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
	}
}

// finish waits, once the host's input ended, for the answers to its
// requests in flight to be written.
func (r *relay) finish(lost <-chan error) error {
	for {
		r.mu.Lock()
		n := len(r.pending)
		r.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-r.settled:
		case err := <-lost:
			return sessionLost(err)
		case <-r.gone:
			return r.goneErr
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
	}
}

func sessionLost(err error) error {
	return fmt.Errorf("fallback: the Streamable HTTP session ended: %w", err)
}

// fromHost relays one line of the host's.
func (r *relay) fromHost(b []byte) {
	if t := bytes.TrimLeft(b, " \t"); len(t) > 0 && t[0] == '[' {
		r.hostError(jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not relayed over Streamable HTTP (the stdio front's fallback)")
		return
	}
	m, err := sdkrpc.DecodeMessage(b)
	if err != nil {
		code := jsonrpc.CodeParseError
		if json.Valid(b) {
			code = jsonrpc.CodeInvalidRequest
		}
		r.hostError(code, err.Error())
		return
	}
	req, notification := m.(*sdkrpc.Request)
	if notification && req.IsCall() {
		r.call(req)
		return
	}
	if notification && r.stateless.Load() {
		// 2026-07-28 defines no client notification over Streamable HTTP
		// (a POST of one is refused, and the go-sdk's connection fails
		// on that): a cancellation ends the request's POST, which
		// cancels it; the rest are dropped.
		if req.Method == protocol.MethodCancelled {
			r.cancelled(req.Params)
		} else {
			r.log.Debug("fallback relay: a 2026-07-28 notification has no Streamable HTTP form: dropped", "method", req.Method)
		}
		return
	}
	// Notifications and answers to the server's requests: written here,
	// one at a time, in the host's order (each POST is answered 202 at
	// once).
	if err := r.conn.Write(r.ctx, m); err != nil && r.ctx.Err() == nil {
		r.log.Warn("fallback relay: a message of the host's was not delivered", "err", err)
	}
	if notification && req.Method == protocol.MethodCancelled {
		// The server has been told; the request's POST ends too.
		r.cancelled(req.Params)
	}
}

// cancelled ends the POST of the request a notifications/cancelled names.
func (r *relay) cancelled(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) == nil {
		if id, err := sdkrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
			r.done(id.Raw())
		}
	}
}

// call writes a request of the host's on its own goroutine: the go-sdk's
// Write returns once the POST's answer has begun (its headers), and the
// POST's context must live until the answer itself came (readServer ends
// it then).
func (r *relay) call(req *sdkrpc.Request) {
	key := req.ID.Raw()
	ctx, cancel := context.WithCancel(r.ctx)
	r.mu.Lock()
	if _, dup := r.pending[key]; dup {
		r.mu.Unlock()
		cancel()
		r.emit(&sdkrpc.Response{ID: req.ID, Error: &sdkrpc.Error{Code: sdkrpc.CodeInvalidRequest, Message: "a request with this id is in flight"}})
		return
	}
	r.pending[key] = cancel
	switch {
	case req.Method == protocol.MethodInitialize:
		r.initID = key
		r.stateless.Store(false)
	case slices.Contains(protocol.MCPStatelessVersions(), flow.MetaVersion(req.Params)):
		r.stateless.Store(true) // server/discover or a request of that era
	}
	r.mu.Unlock()
	r.writers.Add(1)
	go func() {
		defer r.writers.Done()
		err := r.conn.Write(ctx, req)
		if err == nil {
			return
		}
		if r.ctx.Err() == nil && r.inFlight(key) {
			r.emit(&sdkrpc.Response{ID: req.ID, Error: wireError(err)})
		}
		r.done(key)
	}()
}

// wireError is what the host gets for a request whose POST failed: the
// server's JSON-RPC error where its body had one, else -32603.
func wireError(err error) *sdkrpc.Error {
	var we *sdkrpc.Error
	if errors.As(err, &we) {
		return &sdkrpc.Error{Code: we.Code, Message: we.Message, Data: we.Data}
	}
	return &sdkrpc.Error{Code: sdkrpc.CodeInternalError, Message: "Streamable HTTP: " + err.Error()}
}

func (r *relay) inFlight(key any) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.pending[key]
	return ok
}

// done ends a request of the host's: answered, cancelled by the host, or
// failed. Its POST's context ends.
func (r *relay) done(key any) {
	r.mu.Lock()
	cancel := r.pending[key]
	delete(r.pending, key)
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	select {
	case r.settled <- struct{}{}:
	default:
	}
}

// readServer writes every message the connection reads to the host, until
// it fails or is closed.
func (r *relay) readServer() error {
	for {
		m, err := r.conn.Read(r.ctx)
		if err != nil {
			return err
		}
		resp, ok := m.(*sdkrpc.Response)
		if !ok {
			r.emit(m)
			continue
		}
		if resp.Error != nil {
			if _, ok := resp.Error.(*sdkrpc.Error); !ok {
				// The go-sdk's own ending of a call ("request terminated
				// without response"): an error of the relay's.
				resp.Error = &sdkrpc.Error{Code: sdkrpc.CodeInternalError, Message: "Streamable HTTP: " + resp.Error.Error()}
			}
		}
		key := resp.ID.Raw()
		r.mu.Lock()
		initialized := r.initID != nil && r.initID == key
		if initialized {
			r.initID = nil
		}
		r.mu.Unlock()
		if initialized && resp.Error == nil {
			var ir struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(resp.Result, &ir) == nil && ir.ProtocolVersion != "" {
				r.version.v.Store(&ir.ProtocolVersion)
			}
		}
		r.emit(resp)
		r.done(key)
	}
}

// emit writes one message to the host, as one line.
func (r *relay) emit(m sdkrpc.Message) {
	b, err := sdkrpc.EncodeMessage(m)
	if err != nil {
		r.log.Warn("fallback relay: a message for the host could not be encoded", "err", err)
		return
	}
	r.emitLine(b)
}

// hostError answers a line that was not a message (id null, as the stdio
// front does).
func (r *relay) hostError(code jsonrpc.Code, msg string) {
	r.emitLine(jsonrpc.AppendJSON(nil, jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(code, msg))))
}

func (r *relay) emitLine(b []byte) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	select {
	case <-r.gone:
		return
	default:
	}
	if _, err := r.out.Write(append(b, '\n')); err != nil {
		r.goneOnce.Do(func() {
			r.goneErr = fmt.Errorf("fallback: writing to the host: %w", err)
			close(r.gone)
		})
	}
}

// readHost sends the host's lines (blank ones skipped) to lines until in
// ends or fails, or quit closes. A line over MaxLine is held only up to
// it, then skipped (plainio.ErrLineTooLong): the bridge's one NDJSON line
// reader, as the stdio front's.
func readHost(in io.Reader, lines chan<- hostLine, quit <-chan struct{}) {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		b, err := plainio.ReadLineEnds(br, MaxLine, "\n")
		if errors.Is(err, plainio.ErrLineTooLong) {
			_ = plainio.SkipLine(br) // an error or EOF comes again on the next read
		}
		if err == nil && len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		select {
		case lines <- hostLine{b, err}:
		case <-quit:
			return
		}
		if err != nil && !errors.Is(err, plainio.ErrLineTooLong) {
			return
		}
	}
}

// mcpProtocolVersion is the Streamable HTTP header naming the session's
// protocol version (MCP 2025-06-18 and later, Transports §Protocol Version
// Header).
const mcpProtocolVersion = "MCP-Protocol-Version"

// versionHeader adds MCP-Protocol-Version, once the host's initialize has
// been answered, to the requests the go-sdk's connection sends without it:
// the connection learns the version only from a hook its own client calls.
// Safe for concurrent use.
type versionHeader struct {
	base http.RoundTripper
	v    atomic.Pointer[string]
}

func (t *versionHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	if v := t.v.Load(); v != nil && req.Header.Get(mcpProtocolVersion) == "" {
		req = req.Clone(req.Context())
		req.Header.Set(mcpProtocolVersion, *v)
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections closes the base transport's idle connections.
func (t *versionHeader) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
