package core

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/mcp-flow/mcp-flow/bridge/plainio"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The front's core (spec §10), shared by every front: the core type and its
// state, and Front, the one way the core reaches its client (it calls no
// front by name).

// Front is what a front gives its core (spec §10): where the messages for
// the plain MCP client go, and where an execution stream past the inline
// limit goes. The stdio front writes to stdout and to files in its stream
// directory; the HTTP front routes to SSE streams.
type Front interface {
	// Emit hands one message to the client. It is called concurrently, from
	// the core's goroutines and from the MCP-Flow session's hooks, so it
	// must not wait on the client: a front queues (spec §10, backpressure).
	Emit(m jsonrpc.Message)
	// EmitBatch hands the responses to one JSON-RPC batch, together.
	EmitBatch(rs []*jsonrpc.Response)
	// EmitResult hands the client the result of its request id, as Emit
	// does a response: result is the result as it came, with its
	// ref/stream blocks replaced (spec §10), which the front writes once,
	// straight into its output where it can.
	EmitResult(id jsonrpc.ID, result *mcpjson.Splice)
	// Offload stores an execution stream past the inline limit, reading r
	// to its end, and returns the URI the client fetches it from and its
	// size; name is the link's name, the file name a download suggests. On
	// error nothing is left under that URI. A front that does not offload
	// returns an error without reading r: the call fails with -32603 and
	// the stream is released (inlineStream).
	Offload(ctx context.Context, name, mime string, r io.Reader) (uri string, size int64, err error)
}

// Core is the front-neutral half of a front: one plain MCP client ↔ one
// MCP-Flow client session (spec §10). It dials the server with the client's
// initialize, reconnects (or reports the loss), passes requests with their
// cancellation and progress, forwards the server's requests to the client,
// and rewrites results with execution streams into MCP content. Everything
// for the client goes through its front.
//
// Dispatch and Receive are called by the front's reading goroutine, in the
// order the client sent its messages; Finish once, after the last of them.
type Core struct {
	cfg   StdioConfig
	log   *slog.Logger
	front Front

	mu       sync.Mutex
	sess     *flow.Session                 // nil before initialize and while reconnecting
	initReq  *jsonrpc.Request              // the host's initialize, once it succeeded: replayed on reconnection
	proto    string                        // the MCP version the host was answered
	changed  chan struct{}                 // closed (and replaced) whenever sess changes
	lostErr  error                         // why the last session ended, while there is none
	closing  bool                          // the host's input ended: no more reconnection
	pending  map[string]context.CancelFunc // the host's requests in flight, by id
	listens  map[string]bool               // which of pending are subscriptions/listen (listen.go)
	hostWait plainio.Waiters               // the host's answers to requests forwarded from the server
	hostID   atomic.Uint64
	wg       sync.WaitGroup // the host's requests in flight
	// bg counts the watchers of sessions and the reconnection loop; stop
	// ends them.
	bg   sync.WaitGroup
	stop context.Context
	halt context.CancelFunc
	// With ExitOnDisconnect the core does not reconnect: onLost, when set,
	// gets the end of the session (the HTTP front ends its session), else
	// lost does (the stdio front exits).
	onLost func(error)
	lost   chan error
	// redialing: a session the server ended for its token's expiry is
	// being dialled again although ExitOnDisconnect (StdioConfig's
	// redialOnExpiry): requests wait for it as for any reconnection.
	redialing bool
	// stateless: the client speaks MCP 2026-07-28 (spec §11.6): no
	// initialize, one MCP-Flow session of that revision, dialled on demand
	// (dialing is closed when the dial under way ends, dialErr its error).
	stateless bool
	dialing   chan struct{}
	dialErr   error
	// draft02: in WebTransport auto, the server answered in draft-02; the
	// next dial uses it first (dial.go).
	draft02 atomic.Bool
	// giveUp (the stdio front's StdioConfig.ExitIfUnreachable): a first
	// dial that fails for good (UnreachableError.Final) is sent to lost.
	// reached: a dial has succeeded once.
	giveUp  bool
	reached bool
}

// New returns a core that talks to the client through f; with
// ExitOnDisconnect, a lost MCP-Flow session is reported to onLost (when
// set) instead of reconnecting.
func New(cfg StdioConfig, f Front, onLost func(error)) *Core {
	cfg = WithDefaults(cfg)
	b := &Core{cfg: cfg, log: cfg.Logger, front: f, onLost: onLost, pending: map[string]context.CancelFunc{}, listens: map[string]bool{},
		changed: make(chan struct{}), lost: make(chan error, 1)}
	b.stop, b.halt = context.WithCancel(context.Background())
	return b
}

// Lost reports the end of the MCP-Flow session with ExitOnDisconnect when
// New had no onLost (the stdio front), and a first dial that failed for
// good after GiveUpIfUnreachable; buffer 1. The front reads it beside its
// reader and then calls Stop.
func (b *Core) Lost() <-chan error { return b.lost }

// Stop, after Lost, waits for the client's requests in flight (they fail
// at once: their session is over), then ends the session's watchers and
// the reconnection loop.
func (b *Core) Stop() {
	b.wg.Wait()
	b.halt()
	b.bg.Wait()
}

// GiveUpIfUnreachable (StdioConfig.ExitIfUnreachable, the stdio front): a
// first dial that fails for good (UnreachableError.Final) is sent to Lost.
// Call it before the first message.
func (b *Core) GiveUpIfUnreachable() { b.giveUp = true }

// SetStateless makes the client a 2026-07-28 one before its first message
// (spec §11.6), for a front that knows its client's era beforehand (the
// HTTP front's holders); otherwise the core finds it from the first request
// (takeStateless).
func (b *Core) SetStateless() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stateless, b.proto = true, protocol.MCP20260728
}

// SetVersion answers the client as if it had initialized with MCP version
// v (tests that parse as a session of that version would).
func (b *Core) SetVersion(v string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.proto = v
}

// Version is the session's negotiated MCP protocol version ("" before
// initialize).
func (b *Core) Version() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.proto
}

func (b *Core) isStateless() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stateless
}

func (b *Core) Session() *flow.Session {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sess
}

// setSession makes s the session in force (nil: none) and wakes the
// requests waiting for a change. b.mu must be held.
func (b *Core) setSessionLocked(s *flow.Session) {
	b.sess = s
	close(b.changed)
	b.changed = make(chan struct{})
}

// Reconnects reports whether this front reconnects after losing its
// session (spec §10): every front does (the stdio front, and each session of
// the HTTP front, whose client never notices), unless ExitOnDisconnect.
func (b *Core) Reconnects() bool { return !b.cfg.ExitOnDisconnect }

// write hands one message to the front.
func (b *Core) write(m jsonrpc.Message) {
	b.logMessage("to host", m)
	b.front.Emit(m)
}

// logMessage logs one message at debug level (stderr, with -debug or
// MCP_FLOW_DEBUG=1).
func (b *Core) logMessage(dir string, m jsonrpc.Message) {
	if !b.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	switch m := m.(type) {
	case *jsonrpc.Request:
		b.log.Debug(dir, "method", m.Method, "id", m.ID.String())
	case *jsonrpc.Response:
		b.log.Debug(dir, "response", m.ID.String(), "error", m.Error != nil)
	}
}
