package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// Upstream serves an existing MCP server over MCP-Flow (spec §10): each
// MCP-Flow session gets its own upstream connection (a subprocess spoken to
// in NDJSON, an in-process server, an HTTP session). Requests go up with ids
// of the bridge's own; the upstream's own requests (sampling, roots,
// elicitation) reach the MCP-Flow client; progress comes back through the
// session (as datagrams when the client asked for them); $/cancel becomes
// notifications/cancelled; large content leaves the control stream on
// execution streams.
//
// Nothing it does blocks a session's goroutines (flow.Hooks): messages to the
// upstream go through a bounded queue per session that one writer drains
// (spec §10, "Backpressure").
type Upstream struct {
	dial         dialFunc
	threshold    int
	queue        int
	protocol     string        // UpstreamAuto, UpstreamModern or UpstreamLegacy
	probeTimeout time.Duration // server/discover probe (DefaultProbeTimeout)
	log          *slog.Logger

	mu    sync.Mutex
	conns map[*flow.Session]*upConn
	links sync.WaitGroup // one per upstream connection until it is closed
}

// upstreamLink is one session's connection to its upstream MCP server,
// message by message: a subprocess's pipes, an in-process server, an HTTP
// session.
type upstreamLink interface {
	// send passes one message on. One goroutine (the session's writer)
	// calls it, in the order of the queue; it may block while the upstream
	// does not take the message, and close unblocks it.
	send(jsonrpc.Message) error
	// close ends the connection and waits until it has ended.
	close()
}

// dialFunc connects one session's upstream. The link hands every message
// from the upstream to recv (possibly from several goroutines), and calls
// end when the upstream's side is over.
type dialFunc func(ctx context.Context, recv func(jsonrpc.Message), end func(error)) (upstreamLink, error)

// Upstream defaults (spec §8).
const (
	// DefaultUpstreamQueue is the default number of messages waiting for
	// the upstream per session.
	DefaultUpstreamQueue = 64
	// DefaultMaxUpstreamProcesses is the default cap on the stdio
	// upstream's processes running at once.
	DefaultMaxUpstreamProcesses = 64
	// DefaultStopGrace is how long an upstream process has after end of
	// input before SIGTERM, and after SIGTERM before SIGKILL.
	DefaultStopGrace = 2 * time.Second
)

func newUpstream(dial dialFunc, threshold, queue int, log *slog.Logger) *Upstream {
	if threshold <= 0 {
		threshold = 256 << 10
	}
	if queue <= 0 {
		queue = DefaultUpstreamQueue
	}
	if log == nil {
		log = slog.Default()
	}
	return &Upstream{dial: dial, threshold: threshold, queue: queue, log: log, conns: map[*flow.Session]*upConn{},
		protocol: UpstreamAuto, probeTimeout: DefaultProbeTimeout}
}

// setEra applies the era settings of a config (spec §10, "Eras").
func (u *Upstream) setEra(proto string, probe time.Duration) error {
	p, err := normProtocol(proto)
	if err != nil {
		return err
	}
	u.protocol = p
	if probe > 0 {
		u.probeTimeout = probe
	}
	return nil
}

// StdioUpstreamConfig configures an upstream that runs a stdio MCP server,
// one process per MCP-Flow session (spec §10). It is copied by
// NewStdioUpstream.
type StdioUpstreamConfig struct {
	// Command is the server's argv. Required.
	Command []string
	// MaxProcesses bounds the upstream processes running at once, whatever
	// the sessions limit (spec §8): a process counts from its start until it
	// is reaped. Past it a session's initialize is refused with -32005.
	// Default DefaultMaxUpstreamProcesses (64).
	MaxProcesses int
	// StopGrace: when its session ends, a process gets end of input, then
	// SIGTERM after StopGrace if it is still running, then SIGKILL after
	// another StopGrace; its process group goes with it, and it is always
	// reaped (spec §10). Default DefaultStopGrace (2 s).
	StopGrace time.Duration
	// Stderr receives the processes' stderr. Default os.Stderr.
	Stderr io.Writer
	// Threshold: content larger than this many bytes goes on execution
	// streams (0: 256 KiB).
	Threshold int
	// Queue bounds the messages waiting for the upstream per session
	// (default DefaultUpstreamQueue; spec §10, "Backpressure").
	Queue int
	// Protocol is the upstream's MCP era: UpstreamAuto (default),
	// UpstreamModern (2026-07-28) or UpstreamLegacy (the 2025 revisions;
	// a 2025 version string means the same); spec §10, "Eras".
	Protocol string
	// ProbeTimeout bounds the wait for the answer to a server/discover
	// probe (default DefaultProbeTimeout).
	ProbeTimeout time.Duration
	Logger       *slog.Logger
}

// NewStdioUpstream returns an upstream that spawns cfg.Command per session.
// It panics on a Protocol that is not one of the eras (check it with
// CheckUpstreamProtocol first).
func NewStdioUpstream(cfg StdioUpstreamConfig) *Upstream {
	if cfg.MaxProcesses <= 0 {
		cfg.MaxProcesses = DefaultMaxUpstreamProcesses
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	slots := make(chan struct{}, cfg.MaxProcesses)
	start := func(context.Context) (io.WriteCloser, io.Reader, func(), error) {
		return startProcess(cfg, slots)
	}
	u := newPipeUpstream(start, cfg.Threshold, cfg.Queue, cfg.Logger)
	if err := u.setEra(cfg.Protocol, cfg.ProbeTimeout); err != nil {
		panic(err)
	}
	return u
}

// CheckUpstreamProtocol reports whether p names an upstream era
// (StdioUpstreamConfig.Protocol, HTTPUpstreamConfig.Protocol).
func CheckUpstreamProtocol(p string) error {
	_, err := normProtocol(p)
	return err
}

// startProcess starts one upstream process, if a slot is free.
func startProcess(cfg StdioUpstreamConfig, slots chan struct{}) (io.WriteCloser, io.Reader, func(), error) {
	if len(cfg.Command) == 0 {
		return nil, nil, nil, errors.New("upstream: no command")
	}
	select {
	case slots <- struct{}{}:
	default:
		e := jsonrpc.NewError(jsonrpc.CodeTooManyRequests, fmt.Sprintf("this server runs its limit of %d upstream processes (spec §8); try again later", cap(slots)))
		e.Data, _ = json.Marshal(map[string]int{"maxProcesses": cap(slots)})
		return nil, nil, nil, e
	}
	release := func() { <-slots }
	// Pipes of our own, not StdoutPipe: Wait then closes nothing that the
	// reader still reads, and Close unblocks a write the process does not
	// take.
	inR, inW, err := os.Pipe()
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		release()
		return nil, nil, nil, err
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, cfg.Stderr
	cmd.WaitDelay = cfg.StopGrace // a child that keeps stderr open does not hold Wait
	ownGroup(cmd)
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		release()
		return nil, nil, nil, fmt.Errorf("upstream %s: %w", cfg.Command[0], err)
	}
	p := &process{cmd: cmd, grace: cfg.StopGrace, log: cfg.Logger, exited: make(chan struct{})}
	go func() { // the reaper: runs whenever the process ends, session or not
		err := cmd.Wait()
		// What is left of its group goes too, at once: later, its id
		// could name another group.
		signalGroup(cmd.Process.Pid, sigKill)
		p.log.Debug("upstream process ended", "pid", cmd.Process.Pid, "status", err)
		release()
		close(p.exited)
	}()
	return inW, outR, func() { p.stop(); outR.Close() }, nil
}

// process is one running upstream process.
type process struct {
	cmd    *exec.Cmd
	grace  time.Duration
	log    *slog.Logger
	exited chan struct{} // closed once it is reaped
}

// stop ends the process after its input was closed: SIGTERM after the
// grace period, SIGKILL after another (to its process group). It returns
// once the process is reaped (and what was left of its group killed).
func (p *process) stop() {
	pid := p.cmd.Process.Pid
	t := time.NewTimer(p.grace)
	defer t.Stop()
	for _, sig := range []syscall.Signal{sigTerm, sigKill} {
		select {
		case <-p.exited:
			return
		case <-t.C:
		}
		p.log.Warn("upstream process still running; signalling it", "pid", pid, "signal", sig.String(), "after", p.grace)
		signalGroup(pid, sig)
		t.Reset(p.grace)
	}
	<-p.exited
}

// NewPipeUpstream returns an upstream that reaches, per session, whatever
// start connects: newline-delimited JSON written to stdin and read from
// stdout (an in-process go-sdk server, for instance; see ServeSDK). wait is
// called once stdin is closed, and returns once the upstream has ended.
func NewPipeUpstream(start func(ctx context.Context) (stdin io.WriteCloser, stdout io.Reader, wait func(), err error), threshold int, log *slog.Logger) *Upstream {
	return newPipeUpstream(start, threshold, 0, log)
}

func newPipeUpstream(start func(ctx context.Context) (io.WriteCloser, io.Reader, func(), error), threshold, queue int, log *slog.Logger) *Upstream {
	u := newUpstream(nil, threshold, queue, log)
	u.dial = func(ctx context.Context, recv func(jsonrpc.Message), end func(error)) (upstreamLink, error) {
		stdin, stdout, wait, err := start(ctx)
		if err != nil {
			return nil, err
		}
		go readNDJSON(stdout, recv, end, u.log)
		return &pipeLink{stdin: stdin, wait: wait}, nil
	}
	return u
}

// pipeLink speaks NDJSON over a pair of pipes (MCP stdio transport).
type pipeLink struct {
	stdin io.WriteCloser
	wait  func()
	buf   []byte // the writer's; reused
}

func (l *pipeLink) send(m jsonrpc.Message) error {
	l.buf = append(jsonrpc.AppendJSON(l.buf[:0], m), '\n')
	_, err := l.stdin.Write(l.buf)
	if cap(l.buf) > 1<<20 {
		l.buf = nil
	}
	return err
}

func (l *pipeLink) close() {
	l.stdin.Close() // end of input: the upstream ends on EOF (seeds 000/002)
	l.wait()
}

// readNDJSON hands the messages of stdout to recv until it ends, then calls
// end with the reason.
func readNDJSON(stdout io.Reader, recv func(jsonrpc.Message), end func(error), log *slog.Logger) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), MaxMessage)
	for sc.Scan() {
		p, err := codec.Default(codec.JSON).Decode(bytes.Clone(sc.Bytes()))
		if err != nil {
			log.Warn("upstream wrote a non-JSON line", "err", err)
			continue
		}
		msgs, _ := jsonrpc.Validate(p)
		for _, m := range msgs {
			recv(m)
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	end(err)
}

// Configure sets the hooks of a server config that serves this upstream.
func (u *Upstream) Configure(cfg *flow.ServerConfig) {
	cfg.OnInitialize = u.initialize
	cfg.ServeStateless = true // 2026-07-28 clients too (spec §10, "Eras")
	cfg.Handler = flow.HandlerFunc(u.handle)
	cfg.Hooks.Notification = func(s *flow.Session, n *jsonrpc.Request) {
		// The session's reading goroutine: queue it, never wait.
		if c := u.conn(s); c != nil {
			c.notify(n)
		}
	}
}

// Wait returns once every upstream connection opened so far has been
// closed (its process reaped), or when ctx ends. A server calls it after
// its sessions have ended, so that no upstream process outlives it.
func (u *Upstream) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { u.links.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

type upConn struct {
	u       *Upstream
	s       *flow.Session
	link    upstreamLink
	out     chan *outMsg  // the queue to the upstream (spec §10)
	quit    chan struct{} // closed when the session is over: the writer stops
	wdone   chan struct{} // closed when the writer has returned
	nextID  atomic.Int64
	mu      sync.Mutex
	pending waiters
	byToken map[string]*flow.Request // progress tokens of requests in flight
	ended   chan struct{}            // closed when the upstream's side ends
	endOnce sync.Once
	endErr  error
	dropped atomic.Int64 // client notifications dropped since the queue was last open

	// Eras (spec §10, "Eras"). clientModern: the MCP-Flow session speaks
	// 2026-07-28; upModern: the upstream does. initRes is a 2025
	// upstream's initialize result (it answers a 2026 client's
	// server/discover); clientCaps and clientInfo are a 2025 client's,
	// added to the _meta of each request to a 2026 upstream. All are set
	// before the session's first request reaches handle.
	clientModern bool
	upModern     atomic.Bool
	initRes      json.RawMessage
	clientCaps   json.RawMessage
	clientInfo   json.RawMessage
	ready        chan struct{} // a 2026 session's: closed once open has run
	openErr      error
}

// outMsg is one message in the queue. Its state says whether the writer has
// taken it, so that a request cancelled while it waits is never sent (and
// needs no notifications/cancelled).
type outMsg struct {
	m     jsonrpc.Message
	state atomic.Int32
}

const (
	outQueued int32 = iota
	outTaken
	outDropped
)

func (u *Upstream) conn(s *flow.Session) *upConn {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.conns[s]
}

var errUpstreamClosed = errors.New("upstream connection closed")

// send queues m for the upstream. While the queue is full it waits
// (backpressure on the caller: a handler's goroutine, never the session's),
// until ctx ends or the upstream or session is over.
func (c *upConn) send(ctx context.Context, m jsonrpc.Message) (*outMsg, error) {
	om := &outMsg{m: m}
	select {
	case c.out <- om:
		return om, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-c.ended:
		return nil, c.endedError()
	case <-c.quit:
		return nil, errUpstreamClosed
	}
}

// trySend queues m unless the queue is full; for the session's own
// goroutines, which must not block (flow.Hooks).
func (c *upConn) trySend(m jsonrpc.Message) bool {
	select {
	case c.out <- &outMsg{m: m}:
		return true
	default:
		return false
	}
}

// notify queues a notification of the client's. The session's goroutine
// calls it, which must not wait: when the queue is full (the upstream is not
// taking messages) the notification is dropped, and the drops are logged
// once per run of them (spec §10, "Backpressure").
func (c *upConn) notify(n *jsonrpc.Request) {
	if c.upModern.Load() && n.Method != protocol.MethodCancelled {
		return // 2026-07-28 has no other client notification (spec §10, "Eras")
	}
	if c.trySend(n) {
		if d := c.dropped.Swap(0); d > 0 {
			c.u.log.Warn("upstream queue has room again", "dropped", d)
		}
		return
	}
	if c.dropped.Add(1) == 1 {
		c.u.log.Warn("upstream queue full: client notifications are dropped until it has room", "method", n.Method, "queue", c.u.queue)
	}
}

// writer passes the queued messages to the link, one at a time, in order.
func (c *upConn) writer() {
	defer close(c.wdone)
	for {
		select {
		case om := <-c.out:
			if !om.state.CompareAndSwap(outQueued, outTaken) {
				continue // its request was cancelled before it left
			}
			if err := c.link.send(om.m); err != nil {
				c.u.log.Debug("upstream send failed", "err", err)
			}
		case <-c.quit:
			return
		}
	}
}

func (c *upConn) endedError() error {
	return jsonrpc.NewError(jsonrpc.CodeInternalError, "the upstream MCP server ended: "+c.endErr.Error())
}

// initialize starts the upstream for a new session and passes the client's
// initialize on (minus the transport object).
func (u *Upstream) initialize(ctx context.Context, s *flow.Session, params json.RawMessage) (*flow.InitializeResult, error) {
	c := u.newConn(s)
	u.mu.Lock()
	u.conns[s] = c
	u.mu.Unlock()
	if err := c.open(ctx); err != nil {
		u.forget(c)
		return nil, err
	}
	up, err := withoutMember(params, "transport")
	if err != nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "initialize params: "+err.Error())
	}
	var ip struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	_ = json.Unmarshal(up, &ip)
	c.clientCaps, c.clientInfo = ip.Capabilities, ip.ClientInfo
	if u.protocol == UpstreamModern {
		disc, ok := c.probe(ctx, ip.Capabilities, ip.ClientInfo)
		if !ok {
			return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "the upstream did not answer server/discover naming "+protocol.MCP20260728+" (-upstream-protocol "+UpstreamModern+")")
		}
		return initFromDiscover(disc, ip.ProtocolVersion)
	}
	resp, err := c.call(ctx, protocol.MethodInitialize, up)
	var je *jsonrpc.Error
	if err != nil && u.protocol == UpstreamAuto && errors.As(err, &je) {
		// Refused: perhaps a 2026-07-28-only server (spec §10, "Eras").
		if disc, ok := c.probe(ctx, ip.Capabilities, ip.ClientInfo); ok {
			u.log.Info("upstream refused initialize but speaks 2026-07-28: translating for this 2025 session", "initialize error", je.Message)
			return initFromDiscover(disc, ip.ProtocolVersion)
		}
	}
	if err != nil {
		return nil, err
	}
	var res flow.InitializeResult
	if err := json.Unmarshal(resp, &res); err != nil {
		return nil, fmt.Errorf("upstream initialize result: %w", err)
	}
	n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodInitialized, nil)
	_, err = c.send(ctx, n)
	return &res, err
}

// newConn returns a session's connection, not yet open.
func (u *Upstream) newConn(s *flow.Session) *upConn {
	return &upConn{u: u, s: s, byToken: map[string]*flow.Request{}, ended: make(chan struct{}),
		out: make(chan *outMsg, u.queue), quit: make(chan struct{}), wdone: make(chan struct{})}
}

// open dials the upstream and starts the writer; when the session ends,
// the link is closed and the connection forgotten.
func (c *upConn) open(ctx context.Context) error {
	u, s := c.u, c.s
	link, err := u.dial(ctx, c.recv, c.end)
	if err != nil {
		return err
	}
	c.link = link
	u.links.Add(1)
	go c.writer()
	go func() {
		<-s.Done()
		close(c.quit)
		link.close() // unblocks a send the upstream does not take
		<-c.wdone
		u.forget(c)
		u.links.Done()
	}()
	return nil
}

// forget removes c from the connections, if it is still there.
func (u *Upstream) forget(c *upConn) {
	u.mu.Lock()
	if u.conns[c.s] == c {
		delete(u.conns, c.s)
	}
	u.mu.Unlock()
}

// statelessConn returns the connection of a 2026-07-28 session, opening it
// on the session's first request (in the bridge's own name, never that
// request's client's: openStateless) and finding the upstream's era (spec
// §10, "Eras"). Concurrent first requests wait for the one that opens it. A
// failed dial is forgotten, so the next request tries again; a handshake
// that failed after it (the upstream's initialize refused) stays the answer
// of every request of the session, whose upstream connection ends with it.
func (u *Upstream) statelessConn(ctx context.Context, req *flow.Request) (*upConn, error) {
	u.mu.Lock()
	c := u.conns[req.Session]
	if c == nil {
		c = u.newConn(req.Session)
		c.clientModern = true
		c.ready = make(chan struct{})
		u.conns[req.Session] = c
		u.mu.Unlock()
		c.openErr = c.openStateless(req.Session.Context())
		if c.openErr != nil && c.link == nil {
			u.forget(c) // not dialled (the process cap, say): the next request tries again
		}
		close(c.ready)
	} else {
		u.mu.Unlock()
	}
	if c.ready == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "this session initialized with MCP 2025: its requests carry no 2026-07-28 _meta (spec §11.5)")
	}
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return c, c.openErr
}

// openStateless opens a 2026-07-28 session's upstream and settles its era.
// The probe and a 2025 upstream's initialize go in the bridge's own name
// (bridgeClientInfo, no capabilities): the upstream connection serves every
// request of the session, whichever client's _meta each carries.
func (c *upConn) openStateless(ctx context.Context) error {
	if err := c.open(ctx); err != nil {
		return err
	}
	switch c.u.protocol {
	case UpstreamModern:
		c.setModern(true)
		return nil
	case UpstreamAuto:
		if _, ok := c.probe(ctx, nil, bridgeClientInfo); ok {
			return nil
		}
	}
	c.u.log.Debug("2026-07-28 session: initializing a 2025 upstream in the bridge's own name")
	return c.initializeLegacy(ctx)
}

// call sends a request upstream and waits for its result. A request
// cancelled while it waits in the queue is never sent; one cancelled after
// it left is followed by notifications/cancelled.
func (c *upConn) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id := jsonrpc.Int64ID(c.nextID.Add(1))
	ch, forget := c.pending.add(id)
	defer forget()
	om, err := c.send(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params})
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-c.ended:
		return nil, c.endedError()
	case <-ctx.Done():
		if om.state.CompareAndSwap(outQueued, outDropped) {
			return nil, context.Cause(ctx) // it never left: nothing to cancel
		}
		p := append(append([]byte(`{"requestId":`), id.Raw()...), `,"reason":"cancelled by the MCP-Flow client"}`...)
		// On the handler's goroutine, after the session has answered the
		// cancel: it may wait for room in the queue.
		_, _ = c.send(c.s.Context(), &jsonrpc.Request{Method: protocol.MethodCancelled, Params: p})
		return nil, context.Cause(ctx)
	}
}

// recv takes one message of the upstream's.
func (c *upConn) recv(m jsonrpc.Message) {
	switch m := m.(type) {
	case *jsonrpc.Response:
		c.pending.deliver(m)
	case *jsonrpc.Request:
		if m.IsCall() {
			go c.fromUpstream(m)
		} else {
			c.notification(m)
		}
	}
}

// end is called once the upstream's side is over. The requests waiting for
// it fail, and, unless the session is already ending, the MCP-Flow session
// is shut down gracefully: without its upstream it cannot serve anything
// (answers already on their way still go out).
func (c *upConn) end(err error) {
	c.endOnce.Do(func() {
		c.endErr = err
		close(c.ended)
		select {
		case <-c.s.Done():
			return
		default:
		}
		c.u.log.Warn("upstream ended; shutting the session down", "err", err)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = c.s.Shutdown(ctx, "upstream MCP server ended")
		}()
	})
}

// fromUpstream passes the upstream's request to the MCP-Flow client.
func (c *upConn) fromUpstream(m *jsonrpc.Request) {
	c.u.log.Debug("upstream request", "method", m.Method, "id", m.ID.String())
	if c.clientModern || c.upModern.Load() {
		var r *jsonrpc.Response
		if m.Method == protocol.MethodPing {
			r = &jsonrpc.Response{ID: m.ID, Result: json.RawMessage("{}")} // the bridge is the peer it checks
		} else {
			c.u.log.Warn("upstream request toward a 2026-07-28 client refused: it has no server-initiated requests", "method", m.Method)
			r = jsonrpc.NewErrorResponse(m.ID, errNoServerRequests(m.Method))
		}
		_, _ = c.send(c.s.Context(), r)
		return
	}
	resp, err := c.s.Call(c.s.Context(), m.Method, m.Params)
	c.u.log.Debug("upstream request answered", "method", m.Method, "id", m.ID.String(), "err", err)
	var je *jsonrpc.Error
	var r *jsonrpc.Response
	switch {
	case errors.As(err, &je):
		r = jsonrpc.NewErrorResponse(m.ID, je)
	case err != nil:
		r = jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error()))
	default:
		r = &jsonrpc.Response{ID: m.ID, Result: resp.Result}
	}
	_, _ = c.send(c.s.Context(), r)
}

func (c *upConn) notification(n *jsonrpc.Request) {
	if n.Method == protocol.MethodProgress {
		var p flow.Progress
		if json.Unmarshal(n.Params, &p) == nil {
			c.mu.Lock()
			req := c.byToken[string(p.ProgressToken)]
			c.mu.Unlock()
			if req != nil {
				_ = req.Progress(p.Progress, p.Total, p.Message)
				return
			}
		}
	}
	_ = c.s.Notify(n.Method, n.Params)
}

// handle forwards one request of the MCP-Flow client upstream.
func (u *Upstream) handle(ctx context.Context, req *flow.Request) (any, error) {
	c := u.conn(req.Session)
	if stateless := metaOf(req.Params)[protocol.MetaProtocolVersion] != nil || req.Method == protocol.MethodDiscover; c == nil && stateless || c != nil && c.clientModern {
		var err error
		if c, err = u.statelessConn(ctx, req); err != nil {
			return nil, err
		}
	}
	if c == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "no upstream for this session")
	}
	params, answer, err := c.translate(req)
	if err != nil || answer != nil {
		return answer, err
	}
	if tok := progressToken(req.Params); tok != nil {
		c.mu.Lock()
		c.byToken[string(tok)] = req
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.byToken, string(tok))
			c.mu.Unlock()
		}()
	}
	res, err := c.call(ctx, req.Method, params)
	if err != nil {
		return nil, err
	}
	if !c.clientModern && c.upModern.Load() && isInputRequired(res) {
		return nil, errInputRequired(req.Method)
	}
	return u.offload(req, res)
}

// offload moves content larger than the threshold onto execution streams:
// text, image and audio data, and embedded resource blobs and texts. It
// splices the result's text (spec §10): one pass over it, and every member
// keeps its place and its bytes.
func (u *Upstream) offload(req *flow.Request, result json.RawMessage) (json.RawMessage, error) {
	if len(result) < u.threshold {
		return result, nil
	}
	type block struct {
		members    []rawMember
		start, end int
	}
	// The whole walk first (walkContent, the one content walk of spec §10):
	// nothing moves out of a result that does not read.
	var blocks []block
	if err := walkContent(result, func(v []byte, start, end int) error {
		if len(v) == 0 || v[0] != '{' {
			return nil
		}
		ms, err := parseObject(v, func(n string) bool { return n == "resource" })
		if err != nil {
			return err
		}
		blocks = append(blocks, block{ms, start, end})
		return nil
	}); err != nil {
		return result, nil
	}
	var out []byte
	prev := 0
	for _, b := range blocks {
		if ref, ok := u.moveOut(req, b.members); ok {
			out = append(append(out, result[prev:b.start]...), ref...)
			prev = b.end
		}
	}
	if out == nil {
		return result, nil
	}
	return append(out, result[prev:]...), nil
}

// OriginalKey is the _meta key of a ref/stream block that carries the
// content block it replaced, with its payload's value replaced by null (a
// placeholder that keeps the member's place), and the payload's field:
// "text", "data", "resource.text" or "resource.blob" (spec §10).
const OriginalKey = "io.mcp-flow/original"

// moveOut puts a content block's payload on an execution stream when it is
// over the threshold (decoded bytes for base64 data and blobs, UTF-8 for
// text), and returns the ref/stream block that replaces it.
func (u *Upstream) moveOut(req *flow.Request, block []rawMember) ([]byte, bool) {
	str := func(ms []rawMember, name string) string {
		if m := member(ms, name); m != nil {
			if s, ok := unquote(m.value); ok {
				return string(s)
			}
		}
		return ""
	}
	big := func(ms []rawMember, name string, base64ed bool) ([]byte, bool) {
		m := member(ms, name)
		if m == nil || len(m.value) < u.threshold {
			return nil, false
		}
		s, ok := unquote(m.value)
		if !ok || !base64ed {
			return s, ok
		}
		b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(b, s)
		return b[:n], err == nil
	}
	var (
		payload     []byte
		mime, field string
		ok          bool
	)
	switch str(block, "type") {
	case "text":
		payload, ok = big(block, "text", false)
		mime, field = "text/plain; charset=utf-8", "text"
	case "image", "audio":
		payload, ok = big(block, "data", true)
		mime, field = orDefault(str(block, "mimeType"), "application/octet-stream"), "data"
	case "resource":
		r := member(block, "resource")
		if r == nil || r.sub == nil {
			return nil, false
		}
		rmime := str(r.sub, "mimeType")
		if payload, ok = big(r.sub, "blob", true); ok {
			mime, field = orDefault(rmime, "application/octet-stream"), "resource.blob"
		} else if payload, ok = big(r.sub, "text", false); ok {
			mime, field = orDefault(rmime, "text/plain; charset=utf-8"), "resource.text"
		}
	}
	if !ok {
		return nil, false
	}
	w, err := req.OpenStream(mime)
	if err != nil {
		return nil, false // the limit is reached: inline is still correct
	}
	go func() {
		if _, err := w.Write(payload); err != nil {
			w.Fail(err)
			return
		}
		_ = w.Close()
	}()
	// The original block, its payload a null placeholder, rides along so
	// that a bridge to plain MCP can put it back together exactly.
	outer, inner, _ := strings.Cut(field, ".")
	orig := appendObject(nil, block, func(m *rawMember) ([]byte, bool) {
		switch {
		case m.name != outer:
			return nil, false
		case inner == "":
			return []byte("null"), false
		}
		return appendObject(nil, m.sub, func(m *rawMember) ([]byte, bool) {
			if m.name == inner {
				return []byte("null"), false
			}
			return nil, false
		}), false
	})
	ref := w.Ref()
	b := append(make([]byte, 0, len(orig)+160), `{"type":`...)
	b = jsonrpc.AppendQuoted(b, ref.Type)
	b = strconv.AppendUint(append(b, `,"streamTag":`...), uint64(ref.StreamTag), 10)
	if ref.MimeType != "" {
		b = jsonrpc.AppendQuoted(append(b, `,"mimeType":`...), ref.MimeType)
	}
	b = jsonrpc.AppendQuoted(append(b, `,"_meta":{`...), OriginalKey)
	b = append(append(append(b, `:{"block":`...), orig...), `,"field":`...)
	b = jsonrpc.AppendQuoted(b, field)
	return append(b, "}}}"...), true
}

// restore puts payload back into an original block (OriginalKey) at field,
// in its place: the block's text is spliced, its members keep their order.
// A block without the field (an older bridge left it out) gets it last.
func restore(block json.RawMessage, field string, payload []byte) (json.RawMessage, error) {
	var val []byte
	switch field {
	case "text", "resource.text":
		val = jsonrpc.AppendQuoted(nil, string(payload))
	case "data", "resource.blob":
		val = append(base64.StdEncoding.AppendEncode([]byte{'"'}, payload), '"')
	default:
		return nil, fmt.Errorf("unknown payload field %q", field)
	}
	outer, inner, _ := strings.Cut(field, ".")
	ms, err := parseObject(block, func(n string) bool { return inner != "" && n == outer })
	if err != nil {
		return nil, fmt.Errorf("original block: %w", err)
	}
	put := func(ms []rawMember, name string, v []byte) []byte {
		out := appendObject(nil, ms, func(m *rawMember) ([]byte, bool) {
			if m.name == name {
				return v, false
			}
			return nil, false
		})
		if member(ms, name) != nil {
			return out
		}
		out = out[:len(out)-1]
		if len(ms) > 0 {
			out = append(out, ',')
		}
		return append(append(append(jsonrpc.AppendQuoted(out, name), ':'), v...), '}')
	}
	if inner == "" {
		return put(ms, field, val), nil
	}
	r := member(ms, outer)
	if r == nil || r.sub == nil {
		return nil, fmt.Errorf("original block has no %s object", outer)
	}
	return put(ms, outer, put(r.sub, inner, val)), nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
