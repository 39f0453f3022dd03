package bridge

import (
	"context"
	"io"
	"log/slog"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk adapters, above both sides: a go-sdk client over a stdio front
// (ClientTransport), a go-sdk server as an upstream (ServeSDK).

// ClientTransport is an mcp.Transport of the official Go SDK
// (github.com/modelcontextprotocol/go-sdk, v1.8) that reaches an MCP-Flow
// server: a go-sdk client runs over MCP-Flow by swapping its transport. It
// runs a stdio front (Stdio) over in-memory pipes, so the SDK sees plain MCP:
// execution streams arrive inline, progress as notifications.
type ClientTransport struct {
	Config StdioConfig
}

var _ mcp.Transport = (*ClientTransport)(nil)

// Connect starts the front and returns the SDK's connection to it.
func (t *ClientTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	hostR, bridgeW := io.Pipe() // bridge → SDK
	bridgeR, hostW := io.Pipe() // SDK → bridge
	b := NewStdio(t.Config)
	go func() {
		err := b.Run(context.WithoutCancel(ctx), bridgeR, bridgeW)
		bridgeW.CloseWithError(err)
	}()
	return (&mcp.IOTransport{Reader: hostR, Writer: hostW, MaxLineLength: -1}).Connect(ctx)
}

// ServeSDK configures cfg so that the server serves a go-sdk server over
// MCP-Flow: each session is connected to srv over in-memory pipes, and large
// content leaves the control stream on execution streams.
func ServeSDK(cfg *flow.ServerConfig, srv *mcp.Server, log *slog.Logger) {
	start := func(ctx context.Context) (io.WriteCloser, io.Reader, func(), error) {
		upR, bridgeW := io.Pipe() // bridge → SDK server
		bridgeR, upW := io.Pipe() // SDK server → bridge
		ss, err := srv.Connect(context.WithoutCancel(ctx), &mcp.IOTransport{Reader: upR, Writer: upW, MaxLineLength: -1}, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		return bridgeW, bridgeR, func() { _ = ss.Close() }, nil
	}
	NewPipeUpstream(start, 0, log).Configure(cfg)
}
