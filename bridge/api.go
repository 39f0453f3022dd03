package bridge

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
	"github.com/mcp-flow/mcp-flow/bridge/internal/httpfront"
	"github.com/mcp-flow/mcp-flow/bridge/internal/stdiofront"
	"github.com/mcp-flow/mcp-flow/bridge/internal/upstream"
	"github.com/mcp-flow/mcp-flow/bridge/plainio"
)

// The bridges' public API, one name each for what the packages under
// internal/ implement (doc.go says which package does which job). The
// aliases keep one type: a *Stdio is a *stdiofront.Stdio.

// The fronts' MCP-Flow side (package internal/core).
type (
	// StdioConfig configures the MCP-Flow side of a front (spec §10); see
	// its fields.
	StdioConfig = core.StdioConfig
	// UnreachableError is a front's failed dial as one cause and its fix
	// (spec §10, "Reaching the server").
	UnreachableError = core.UnreachableError
	// ServerLostError is a front's MCP-Flow session lost with
	// ExitOnDisconnect (spec §10).
	ServerLostError = core.ServerLostError
)

// StdioConfig.WebTransport's dialects (spec §10, "Reaching the server").
const (
	WebTransportAuto    = core.WebTransportAuto
	WebTransportCurrent = core.WebTransportCurrent
	WebTransportDraft02 = core.WebTransportDraft02
)

// DefaultHostQueue is the default of StdioConfig.HostQueue (spec §8, §10).
const DefaultHostQueue = core.DefaultHostQueue

// Diagnose returns a failed dial of url as an *UnreachableError (see
// core.Diagnose); took is how long it waited (0: unknown).
func Diagnose(url string, err error, took time.Duration) *UnreachableError {
	return core.Diagnose(url, err, took)
}

// MaxMessage bounds one message read by a bridge: a line or a
// Content-Length body from stdio, an HTTP body, an SSE event (64 MiB).
const MaxMessage = plainio.MaxMessage

// Stdio is the stdio front (spec §10; package internal/stdiofront).
type Stdio = stdiofront.Stdio

// NewStdio returns a stdio front (spec §10).
func NewStdio(cfg StdioConfig) *Stdio { return stdiofront.NewStdio(cfg) }

// The Streamable HTTP front (package internal/httpfront).
type (
	// HTTPConfig configures a Streamable HTTP front; see its fields.
	HTTPConfig = httpfront.HTTPConfig
	// HTTPFront is an http.Handler serving one MCP endpoint (spec §10,
	// §11.6).
	HTTPFront = httpfront.HTTPFront
)

// Defaults of HTTPConfig.
const (
	DefaultDownloadLifetime = httpfront.DefaultDownloadLifetime
	DefaultWriteTimeout     = httpfront.DefaultWriteTimeout
)

// NewHTTPFront returns a Streamable HTTP front (spec §10, §11.6).
func NewHTTPFront(cfg HTTPConfig) *HTTPFront { return httpfront.NewHTTPFront(cfg) }

// CheckPublicURL checks an HTTPConfig.PublicURL.
func CheckPublicURL(s string) (*url.URL, error) { return httpfront.CheckPublicURL(s) }

// The upstream (package internal/upstream).
type (
	// Upstream serves an existing MCP server over MCP-Flow (spec §10).
	Upstream = upstream.Upstream
	// StdioUpstreamConfig configures an upstream of stdio processes.
	StdioUpstreamConfig = upstream.StdioUpstreamConfig
	// HTTPUpstreamConfig configures an upstream of a Streamable HTTP server.
	HTTPUpstreamConfig = upstream.HTTPUpstreamConfig
)

// The upstream's eras (StdioUpstreamConfig.Protocol) and defaults.
const (
	UpstreamAuto                = upstream.UpstreamAuto
	UpstreamModern              = upstream.UpstreamModern
	UpstreamLegacy              = upstream.UpstreamLegacy
	DefaultProbeTimeout         = upstream.DefaultProbeTimeout
	DefaultUpstreamQueue        = upstream.DefaultUpstreamQueue
	DefaultMaxUpstreamProcesses = upstream.DefaultMaxUpstreamProcesses
	DefaultStopGrace            = upstream.DefaultStopGrace
)

// NewStdioUpstream returns an upstream that starts, per MCP-Flow session, the
// stdio MCP server of cfg (spec §10).
func NewStdioUpstream(cfg StdioUpstreamConfig) *Upstream { return upstream.NewStdioUpstream(cfg) }

// NewHTTPUpstream returns an upstream that reaches, per MCP-Flow session, the
// Streamable HTTP MCP server of cfg.
func NewHTTPUpstream(cfg HTTPUpstreamConfig) *Upstream { return upstream.NewHTTPUpstream(cfg) }

// NewPipeUpstream returns an upstream that speaks NDJSON over the pipes start
// opens per MCP-Flow session (see upstream.NewPipeUpstream).
func NewPipeUpstream(start func(ctx context.Context) (stdin io.WriteCloser, stdout io.Reader, wait func(), err error), threshold int, log *slog.Logger) *Upstream {
	return upstream.NewPipeUpstream(start, threshold, log)
}

// CheckUpstreamProtocol reports whether p names an upstream era.
func CheckUpstreamProtocol(p string) error { return upstream.CheckUpstreamProtocol(p) }
