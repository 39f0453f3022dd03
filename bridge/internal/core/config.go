package core

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
)

// StdioConfig: the MCP-Flow side of every front (the stdio front's config,
// and HTTPConfig.Stdio), with its defaults.

// StdioConfig configures the MCP-Flow side of a front (spec §10): the stdio
// front's, where an MCP host spawns the bridge as its stdio server, and the
// HTTP front's (HTTPConfig.Stdio).
type StdioConfig struct {
	// URL of the MCP-Flow server, and how to dial it. Info, Capabilities
	// and ProtocolVersion are taken from the host's initialize.
	URL    string
	Client flow.ClientConfig
	// WebTransport is the WebTransport dialect the front dials in (spec
	// §10, "Reaching the server"), as mcp-flow's -webtransport: "auto" (or
	// ""), the default, dials the current dialect and, when the server
	// refuses it as a WebTransport draft-02 server does (the published
	// v0.1 examples), dials again in draft-02 (package internal/draft02)
	// and keeps to it for the reconnections until a dial in it fails;
	// "current" and "draft02" dial only that one. Client.DialSession or
	// Client.Transport, when set, are used as they are.
	WebTransport string
	// ExitIfUnreachable (the stdio front): when the front's first dial
	// fails for a reason retrying will not fix (UnreachableError.Final:
	// no QUIC answer within the handshake budget, connection refused, a
	// certificate not trusted, HTTP 404, the other dialect), the host's
	// request is answered with the error and Run returns the
	// *UnreachableError instead of waiting for the host's next request.
	// A refused token (401, 403) is not final: the token file may be
	// rewritten. A server lost later is reconnected to as always.
	ExitIfUnreachable bool
	// Token, if set, is the front's own credential (docs/spec.md §9.1,
	// §10 "Authentication on the fronts"): asked for an access token on
	// every dial, the first and each reconnection (bearer.FileSource reads
	// a token file again each time, so a refreshed file is used), and sent
	// on the CONNECT as "Authorization: Bearer" (it takes the place of
	// Client.Token). The server's tools then see this identity. A server
	// that refuses it (401, 403) is reported with its challenge; a
	// reconnection then waits ReconnectMax before trying again. The HTTP
	// front with PassToken presents each client's own token instead.
	Token func(ctx context.Context) (string, error)
	// redialOnExpiry, set by the HTTP front with PassToken: a session the
	// server ended because the client's token it dialled with expired
	// (its $/shutdown names flow.ReasonTokenExpired) is dialled again, with
	// the subject's latest token, even with ExitOnDisconnect: the server
	// did not go away.
	redialOnExpiry bool
	// tokenFresh, with PassToken, returns a channel closed when the
	// client offers its next token: a reconnection the server refused
	// waits for it rather than retrying the refused token.
	tokenFresh func() <-chan struct{}
	// InlineLimit is the largest execution stream inlined into a result
	// (as text, or as a base64 blob). A larger one is offloaded by the
	// front (the stdio front: a file in StreamDir) and named with a
	// resource_link. Default 8 MiB: under the 16 MiB line cap of the
	// go-sdk's stdio client.
	InlineLimit int64
	// StreamDir receives the files of streams past InlineLimit (spec §10).
	// Default: a directory of the front's own, made in os.TempDir() on
	// first use. The files (and that directory) are deleted when the
	// front's session ends: for the stdio front, when Run returns.
	StreamDir string
	Logger    *slog.Logger
	// ExitOnDisconnect: when the MCP-Flow session ends other than by the
	// host's EOF, Run answers the requests in flight and returns a
	// *ServerLostError instead of reconnecting (spec §10), for hosts that
	// restart their servers themselves.
	ExitOnDisconnect bool
	// ReconnectMin and ReconnectMax bound the backoff between reconnection
	// attempts: the first waits ReconnectMin, each next one twice as long,
	// up to ReconnectMax; attempts go on until one succeeds or the host's
	// input ends. Defaults 100 ms and 5 s.
	ReconnectMin, ReconnectMax time.Duration
	// ReconnectWait bounds how long a host request that arrives while the
	// front reconnects waits for the new session before it fails with
	// -32603 (default 10 s).
	ReconnectWait time.Duration
	// HostQueue bounds the bytes of messages the stdio front holds for a
	// host that does not read its stdout (default DefaultHostQueue, 32 MiB;
	// spec §10): past it, notifications are dropped and responses wait.
	HostQueue int
}

// WithDefaults returns cfg with the defaults in its zero fields. New
// applies them to its own copy only: a front that reads the config itself
// (HostQueue, StreamDir, Logger) applies them first.
func WithDefaults(cfg StdioConfig) StdioConfig {
	if cfg.InlineLimit <= 0 {
		cfg.InlineLimit = 8 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = 100 * time.Millisecond
	}
	if cfg.ReconnectMax < cfg.ReconnectMin {
		cfg.ReconnectMax = max(cfg.ReconnectMin, 5*time.Second)
	}
	if cfg.ReconnectWait <= 0 {
		cfg.ReconnectWait = 10 * time.Second
	}
	if cfg.HostQueue <= 0 {
		cfg.HostQueue = DefaultHostQueue
	}
	return cfg
}

// PassToken makes cfg dial with a client's token (the HTTP front with
// PassToken): token is the subject's latest token, fresh returns a channel
// closed when the client offers its next one; a session the server ended
// for its token's expiry is dialled again.
func PassToken(cfg *StdioConfig, token func(ctx context.Context) (string, error), fresh func() <-chan struct{}) {
	cfg.Token, cfg.redialOnExpiry, cfg.tokenFresh = token, true, fresh
}

// DefaultHostQueue is the default of StdioConfig.HostQueue (spec §8, §10).
const DefaultHostQueue = 32 << 20
