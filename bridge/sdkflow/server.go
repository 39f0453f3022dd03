package sdkflow

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/mcp-flow/mcp-flow/bridge/internal/upstream"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server side: each MCP-Flow server session gets a go-sdk server
// session of its own, on a connection that passes messages as they are,
// through the upstream's core (package bridge/internal/upstream).

// ServerOptions configures Serve. The zero value (or nil) is the default.
type ServerOptions struct {
	// Threshold: text and binary content of a result longer than this many
	// bytes leaves the control stream on an execution stream (spec §5,
	// §10). Default 256 KiB.
	Threshold int
	// Logger receives the logs of the sessions' bridging (default
	// slog.Default()).
	Logger *slog.Logger
}

// Server is what Serve set up: Wait tells when the go-sdk server sessions
// it connected have all ended.
type Server struct{ up *upstream.Upstream }

// Wait returns once every go-sdk server session opened so far has ended
// (each ends with its MCP-Flow session), or when ctx ends.
func (s *Server) Wait(ctx context.Context) error { return s.up.Wait(ctx) }

// Serve configures cfg so that its server serves srv, a go-sdk server,
// over MCP-Flow: cfg's OnInitialize, Handler and notification hook are
// set, and each MCP-Flow session gets a go-sdk server session of its own
// (srv.Connect) that sees the client's messages as the go-sdk's
// jsonrpc.Message values, neither encoded nor framed on the way. As an
// upstream does (spec §10): requests reach srv under ids of the session's
// own; $/cancel becomes notifications/cancelled (the handler's context
// ends); srv's progress goes out as the session sends progress (datagrams
// when the client asked for them); srv's own requests (roots, sampling,
// elicitation) reach a 2025 client, while a 2026-07-28 client, which takes
// none, has them refused with -32601; content past opts.Threshold leaves on
// execution streams; $/shutdown and the session's end close srv's
// session. Both MCP eras are served (spec §11).
func Serve(cfg *flow.ServerConfig, srv *mcp.Server, opts *ServerOptions) *Server {
	if opts == nil {
		opts = &ServerOptions{}
	}
	connect := func(ctx context.Context, recv func(jsonrpc.Message), end func(error)) (upstream.Link, error) {
		c := &serverConn{recv: recv, end: end, in: make(chan jsonrpc.Message), done: make(chan struct{})}
		ss, err := srv.Connect(context.WithoutCancel(ctx), transport{c}, nil)
		if err != nil {
			return upstream.Link{}, err
		}
		served.Store(ss, c) // before the first message: StreamResult finds it
		return upstream.Link{Send: c.send, Raw: c.takeRaw, Close: func() {
			c.Close() // srv's read ends: its session ends, its handlers' contexts too
			_ = ss.Wait()
			served.Delete(ss)
		}}, nil
	}
	up := upstream.NewLinkUpstream(connect, opts.Threshold, opts.Logger)
	up.Configure(cfg)
	return &Server{up}
}

// transport hands the go-sdk server its connection.
type transport struct{ c *serverConn }

func (t transport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// serverConn is a go-sdk server session's connection: Read takes what the
// upstream's writer sends (one message at a time, in its order: send
// waits for Read), Write hands srv's messages to the upstream. Close ends
// both directions and tells the upstream (end), once.
type serverConn struct {
	recv      func(jsonrpc.Message)
	end       func(error)
	in        chan jsonrpc.Message
	done      chan struct{}
	closeOnce sync.Once

	rawMu sync.Mutex
	raws  map[string]rawStream // StreamResult's streams not yet sent (raw.go)
}

// send passes m to the go-sdk server's Read; it waits until Read takes it
// or the connection is closed.
func (c *serverConn) send(m jsonrpc.Message) error {
	select {
	case c.in <- m:
		return nil
	case <-c.done:
		return mcp.ErrConnectionClosed
	}
}

func (c *serverConn) Read(ctx context.Context) (sdk.Message, error) {
	select {
	case m := <-c.in:
		return toSDK(m), nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *serverConn) Write(_ context.Context, m sdk.Message) error {
	select {
	case <-c.done:
		return mcp.ErrConnectionClosed
	default:
	}
	fm, err := toFlow(m)
	if err != nil {
		return err
	}
	c.recv(fm)
	return nil
}

func (c *serverConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		c.end(io.EOF)
	})
	return nil
}

// SessionID is empty: an MCP-Flow session has no id on the MCP level.
func (c *serverConn) SessionID() string { return "" }
