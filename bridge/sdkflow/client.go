package sdkflow

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
	sdk "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The client side: a go-sdk client's connection on an MCP-Flow client
// session, through a front's core (package bridge/internal/core) whose
// front is the connection itself.

// DefaultInlineLimit is the default of ClientTransport.InlineLimit: 1 GiB.
// The go-sdk's connection has no line cap (its stdio transport's is 16
// MiB, which the stdio front stays under); the bound is the memory the
// inlined result takes, base64 and all.
const DefaultInlineLimit = 1 << 30

// ClientTransport is an mcp.Transport of the official Go SDK
// (github.com/modelcontextprotocol/go-sdk, v1.8) that reaches an MCP-Flow
// server: a go-sdk client runs over MCP-Flow by swapping its transport.
// Its connection speaks to one MCP-Flow client session, dialled with the
// client's initialize (or, for a 2026-07-28 client, its first request;
// spec §11.6), as the stdio front does (spec §10), message by message: an
// execution stream comes back inline in its result (its original block,
// or text, or a base64 blob), progress as notifications/progress, a
// notifications/cancelled becomes $/cancel, and the server's requests
// (sampling, roots, elicitation) reach the client's handlers. When a 2025
// client's MCP-Flow session ends, Read fails and the go-sdk ends its
// session: the transport does not reconnect. A 2026-07-28 client's session
// holds no state (spec §11.6): its next request dials a new one.
//
// A ClientTransport is used for one Connect, as every mcp.Transport.
type ClientTransport struct {
	// URL of the MCP-Flow server, and how to dial it. Info,
	// Capabilities and ProtocolVersion are taken from the go-sdk client's
	// initialize; Handler and Hooks.Notification are the connection's.
	URL    string
	Client flow.ClientConfig
	// InlineLimit is the largest execution stream inlined into a result
	// (default DefaultInlineLimit). A call whose stream is larger fails
	// with -32603, and the stream is released.
	InlineLimit int64
	// KeepStreams: a raw execution stream of a result (one no upstream
	// bridge moved out of a content block, such as StreamResult's) is not
	// inlined but named by a resource_link block (URI KeptPrefix…, name
	// "stream-<tag>" and an extension, its MIME type), whose bytes
	// OpenStream reads as they come (spec §10). Default false: every
	// stream is inlined, as every go-sdk client expects. Moved content
	// (text, images, blobs past the server's threshold) is inlined either
	// way.
	KeepStreams bool
	// Logger receives the connection's logs (default slog.Default()).
	Logger *slog.Logger
}

var _ mcp.Transport = (*ClientTransport)(nil)

// Connect returns the connection; it dials when the go-sdk client sends
// its first message (initialize, or a 2026-07-28 request).
func (t *ClientTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.InlineLimit
	if limit <= 0 {
		limit = DefaultInlineLimit
	}
	return newClientConn(core.StdioConfig{URL: t.URL, Client: t.Client, InlineLimit: limit, Logger: t.Logger, ExitOnDisconnect: true}, t.KeepStreams), nil
}

// clientConn is the go-sdk client's connection, and its core's Front.
//
// Write hands each message to the core in the order of the writes (one at
// a time: the core wants its client's order, and holds the writes that
// follow an initialize until its dial is done); the core's messages for
// the client wait in an inbox for Read. Close ends the requests in flight,
// shuts the MCP-Flow session down and returns once the core's goroutines
// have ended.
type clientConn struct {
	core   *core.Core
	in     *inbox
	ctx    context.Context // the requests'; Close cancels it
	cancel context.CancelFunc

	wmu       sync.Mutex // held while the core takes a message
	closed    bool       // under wmu: no more messages for the core
	closeOnce sync.Once

	keptMu     sync.Mutex
	kept       map[string]struct{} // the URIs of its kept streams not yet opened (rawread.go)
	keptClosed bool
}

func newClientConn(cfg core.StdioConfig, keep bool) *clientConn {
	c := &clientConn{in: newInbox()}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	// The session's end (ExitOnDisconnect) fails Read; the go-sdk then
	// closes the connection. On the core's watcher: it must not wait.
	c.core = core.New(cfg, clientFront{c, cfg.InlineLimit, keep}, func(err error) { c.in.close(&core.ServerLostError{URL: cfg.URL, Err: err}, false) })
	return c
}

func (c *clientConn) Read(ctx context.Context) (sdk.Message, error) {
	m, err := c.in.get(ctx)
	if err != nil {
		return nil, err
	}
	return toSDK(m), nil
}

func (c *clientConn) Write(ctx context.Context, m sdk.Message) error {
	fm, err := toFlow(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return mcp.ErrConnectionClosed
	}
	dctx := c.ctx
	if r, ok := fm.(*jsonrpc.Request); ok && r.Method == protocol.MethodInitialize {
		// The dial honours the go-sdk's Connect context too.
		var cancel context.CancelFunc
		dctx, cancel = context.WithCancel(c.ctx)
		defer context.AfterFunc(ctx, cancel)()
		defer cancel()
	}
	c.core.Dispatch(dctx, fm)
	return nil
}

func (c *clientConn) Close() error {
	c.closeOnce.Do(func() {
		c.in.close(mcp.ErrConnectionClosed, true)
		c.cancel() // the requests in flight end now: their answers are not read
		c.wmu.Lock()
		c.closed = true
		c.wmu.Unlock()
		c.dropKept()
		_ = c.core.Finish()
	})
	return nil
}

// SessionID is empty: an MCP-Flow session has no id on the MCP level.
func (c *clientConn) SessionID() string { return "" }

// clientFront is the connection as its core's Front.
type clientFront struct {
	c     *clientConn
	limit int64
	keep  bool // KeepStreams: it keeps raw streams (rawread.go)
}

func (f clientFront) Emit(m jsonrpc.Message) { f.c.in.put(m) }

func (f clientFront) EmitBatch(rs []*jsonrpc.Response) {
	for _, r := range rs { // the go-sdk sends no batches: never called
		f.c.in.put(r)
	}
}

// EmitResult hands over the result spliced once (its text as it came
// when nothing was replaced).
func (f clientFront) EmitResult(id jsonrpc.ID, result *mcpjson.Splice) {
	f.c.in.put(&jsonrpc.Response{ID: id, Result: result.Bytes()})
}

// Offload refuses: the connection has nowhere to put a stream past its
// inline limit but the result.
func (f clientFront) Offload(context.Context, string, string, io.Reader) (string, int64, error) {
	return "", 0, fmt.Errorf("sdkflow: an execution stream past the transport's InlineLimit of %d bytes", f.limit)
}
