// Package fallback dials an MCP server at one https URL over MCP-Flow and,
// where no QUIC handshake answers within a short budget, over Streamable
// HTTP at the same URL instead (docs/spec.md §10.2, beyond the guide): the
// server's TCP listener at the same host and port serves it (§10.1). The
// caller holds one Client either way: calls, progress and cancellation work
// alike, and execution streams arrive as ref/stream blocks (MCP-Flow) or as
// the server's HTTP front turned them into MCP content, inline or as a
// download on the server's origin (Response.Payload reads all three).
//
// The race (Happy Eyeballs, RFC 8305 in spirit): MCP-Flow is dialled at
// once. If its QUIC handshake completes within Config.Budget, UDP works and
// the session is MCP-Flow, however long the CONNECT and initialize then
// take. If not, Streamable HTTP is dialled too, and the first session to be
// ready wins; the other is closed. A dial of MCP-Flow that fails outright
// (an ICMP "port unreachable", a refused CONNECT) starts the HTTP dial at
// once.
package fallback

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
)

// Transport names the transport a Client chose.
type Transport string

const (
	// Auto races MCP-Flow against the Budget, then Streamable HTTP.
	Auto Transport = ""
	// MCPFlow is MCP-Flow over WebTransport on UDP (the guide).
	MCPFlow Transport = "mcp-flow"
	// StreamableHTTP is MCP's Streamable HTTP on TCP at the same URL
	// (2025-11-25 era), as the server's HTTP front serves it (spec §10.1).
	StreamableHTTP Transport = "streamable-http"
)

// DefaultBudget is how long Dial waits for MCP-Flow's QUIC handshake
// before it dials Streamable HTTP as well. A QUIC handshake takes one round
// trip (1.5 with the server's flight): 400 ms lets a path of up to ~250 ms
// RTT (intercontinental, mobile) finish it, and costs a blocked network
// less than half a second before the TCP dial starts, against the 10 s a
// full handshake timeout would cost.
const DefaultBudget = 400 * time.Millisecond

// Config configures Dial. The zero value races with DefaultBudget.
type Config struct {
	// Flow configures the MCP-Flow session; its TLSConfig, Header, Info,
	// Capabilities, Logger and Token serve the Streamable HTTP one too.
	Flow flow.ClientConfig
	// Transport forces one transport; Auto (empty) races.
	Transport Transport
	// Budget replaces DefaultBudget.
	Budget time.Duration
	// HTTPClient, if set, carries the Streamable HTTP session and the
	// downloads; by default one with Flow.TLSConfig over HTTP/2 or 1.1.
	HTTPClient *http.Client
}

// Client is a session with an MCP server over the transport Dial chose.
type Client struct {
	transport Transport
	reason    string
	sess      *flow.Session // MCPFlow
	h         *httpSession  // StreamableHTTP
}

// Transport is the transport chosen.
func (c *Client) Transport() Transport { return c.transport }

// Reason says why that transport, in words for a log line: "QUIC answered
// in 3ms", "no QUIC handshake within 400ms; Streamable HTTP answered first".
func (c *Client) Reason() string { return c.reason }

// Session is the MCP-Flow session, nil over Streamable HTTP.
func (c *Client) Session() *flow.Session { return c.sess }

// Dial connects to url (https://host:port/path) and initializes a session
// over the transport the race picks (see the package doc). The error of a
// failed dial names what each transport said.
func Dial(ctx context.Context, url string, cfg Config) (*Client, error) {
	budget := cfg.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	if cfg.Flow.Logger == nil {
		cfg.Flow.Logger = slog.Default()
	}
	switch cfg.Transport {
	case MCPFlow:
		s, err := flow.Dial(ctx, url, cfg.Flow)
		if err != nil {
			return nil, err
		}
		return &Client{transport: MCPFlow, reason: "forced", sess: s}, nil
	case StreamableHTTP:
		h, err := dialHTTP(ctx, url, cfg)
		if err != nil {
			return nil, err
		}
		return &Client{transport: StreamableHTTP, reason: "forced", h: h}, nil
	case Auto:
	default:
		return nil, fmt.Errorf("fallback: unknown transport %q (want %q or %q)", cfg.Transport, MCPFlow, StreamableHTTP)
	}
	return race(ctx, url, cfg, budget)
}

type dialed struct {
	s   *flow.Session
	h   *httpSession
	err error
}

func race(ctx context.Context, url string, cfg Config, budget time.Duration) (*Client, error) {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	quicUp := make(chan struct{})
	var once sync.Once
	fcfg := cfg.Flow
	if prev := fcfg.Handshaked; prev != nil {
		fcfg.Handshaked = func() { once.Do(func() { close(quicUp) }); prev() }
	} else {
		fcfg.Handshaked = func() { once.Do(func() { close(quicUp) }) }
	}
	flowDone := make(chan dialed, 1)
	httpDone := make(chan dialed, 1)
	go func() {
		s, err := flow.Dial(ctx, url, fcfg)
		flowDone <- dialed{s: s, err: err}
	}()
	var (
		flowErr, httpErr error
		httpStarted      bool
		handshaked       bool
		why              string
	)
	startHTTP := func(reason string) {
		if httpStarted {
			return
		}
		httpStarted, why = true, reason
		go func() {
			h, err := dialHTTP(ctx, url, cfg)
			httpDone <- dialed{h: h, err: err}
		}()
	}
	// lose closes what the other dial brings once one has won.
	lose := func(ch chan dialed, pending bool) {
		if !pending {
			return
		}
		cancel()
		if d := <-ch; d.s != nil {
			d.s.Close()
		} else if d.h != nil {
			d.h.Close()
		}
	}
	timer := time.NewTimer(budget)
	defer timer.Stop()
	flowPending := true
	for {
		select {
		case <-quicUp:
			quicUp = nil
			handshaked = true
			timer.Stop()
		case <-timer.C:
			startHTTP(fmt.Sprintf("no QUIC handshake within %v", budget))
		case d := <-flowDone:
			flowPending = false
			if d.err == nil {
				reason := fmt.Sprintf("QUIC answered; MCP-Flow session ready in %v", since(start))
				if httpStarted {
					reason = why + "; MCP-Flow was ready first, in " + since(start)
				}
				lose(httpDone, httpStarted && httpErr == nil)
				return &Client{transport: MCPFlow, reason: reason, sess: d.s}, nil
			}
			flowErr = d.err
			if httpStarted && httpErr != nil || ctx.Err() != nil {
				return nil, dialErr(flowErr, httpErr)
			}
			if handshaked && !httpStarted {
				// UDP works and the server refused the session: not a
				// network to fall back from.
				return nil, flowErr
			}
			startHTTP("MCP-Flow failed: " + flowErr.Error())
		case d := <-httpDone:
			if d.err == nil {
				lose(flowDone, flowPending)
				return &Client{transport: StreamableHTTP, reason: fmt.Sprintf("%s; Streamable HTTP session ready in %v", why, since(start)), h: d.h}, nil
			}
			httpErr = d.err
			if !flowPending {
				return nil, dialErr(flowErr, httpErr)
			}
		case <-ctx.Done():
			lose(flowDone, flowPending)
			lose(httpDone, httpStarted && httpErr == nil)
			return nil, ctx.Err()
		}
	}
}

func since(t time.Time) string { return time.Since(t).Round(time.Millisecond).String() }

func dialErr(flowErr, httpErr error) error {
	return fmt.Errorf("fallback: no transport: MCP-Flow: %w; Streamable HTTP: %w", flowErr, httpErr)
}

// httpClient is cfg.HTTPClient or one that trusts what Flow.TLSConfig
// trusts, over HTTP/2 (or 1.1); with Flow.Token, sending its token, and
// refusals turned into errors that say why (WithToken).
func httpClient(cfg Config) *http.Client {
	if cfg.HTTPClient != nil {
		return WithToken(cfg.HTTPClient, cfg)
	}
	tc := &tls.Config{}
	if cfg.Flow.TLSConfig != nil {
		tc = cfg.Flow.TLSConfig.Clone()
	}
	tc.NextProtos = nil // the transport's own: h2, http/1.1
	return WithToken(&http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}}, cfg)
}

// ErrClosed is the error of a call on a closed Client.
var ErrClosed = errors.New("fallback: client closed")
