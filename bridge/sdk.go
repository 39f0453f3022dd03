package bridge

import (
	"context"
	"log/slog"

	"github.com/mcp-flow/mcp-flow/bridge/sdkflow"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk adapters, kept by name: package sdkflow is the go-sdk
// transport (a client's mcp.Transport, a server served on a
// flow.ServerConfig), and these are thin wrappers over it.

// ClientTransport is an mcp.Transport of the official Go SDK that reaches
// an MCP-Flow server: see sdkflow.ClientTransport, which it is with
// Config's URL, Client, Token (the client's credential, in place of
// Client.Token), InlineLimit and Logger; the rest of a front's config
// (reconnection, stream files, the host queue) has no use in a transport.
//
// Deprecated: use sdkflow.ClientTransport.
type ClientTransport struct {
	Config StdioConfig
}

var _ mcp.Transport = (*ClientTransport)(nil)

// Connect returns the SDK's connection (sdkflow.ClientTransport.Connect).
func (t *ClientTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c := t.Config.Client
	if t.Config.Token != nil {
		c.Token = t.Config.Token
	}
	return (&sdkflow.ClientTransport{URL: t.Config.URL, Client: c, InlineLimit: t.Config.InlineLimit, Logger: t.Config.Logger}).Connect(ctx)
}

// ServeSDK configures cfg so that the server serves a go-sdk server over
// MCP-Flow (sdkflow.Serve).
//
// Deprecated: use sdkflow.Serve.
func ServeSDK(cfg *flow.ServerConfig, srv *mcp.Server, log *slog.Logger) {
	sdkflow.Serve(cfg, srv, &sdkflow.ServerOptions{Logger: log})
}
