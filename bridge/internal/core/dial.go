package core

import (
	"context"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/draft02"
)

// The core's dial in its WebTransport dialect (spec §10, "Reaching the
// server"): the current one, draft-02 (the published v0.1 examples), or
// auto, which dials again in draft-02 on the refusal and remembers it.

// The values of StdioConfig.WebTransport, as mcp-flow's -webtransport.
const (
	WebTransportAuto    = "auto"
	WebTransportCurrent = "current"
	WebTransportDraft02 = "draft02"
)

// dialIn opens the session with cc in the front's dialect. In auto, a
// server that refuses the current dialect as a draft-02 server does
// (draft02.Needed) is dialled again at once in draft-02, which later dials
// (reconnections) then use first, until one of them fails.
func (b *Core) dialIn(ctx context.Context, cc flow.ClientConfig) (*flow.Session, error) {
	if cc.DialSession != nil || cc.Transport != nil {
		return flow.Dial(ctx, b.cfg.URL, cc)
	}
	switch b.cfg.WebTransport {
	case WebTransportCurrent:
		return flow.Dial(ctx, b.cfg.URL, cc)
	case WebTransportDraft02:
		return flow.Dial(ctx, b.cfg.URL, inDraft02(cc))
	}
	if b.draft02.Load() {
		s, err := flow.Dial(ctx, b.cfg.URL, inDraft02(cc))
		if err == nil {
			return s, nil
		}
		// The server may be back in the current dialect: the next dial
		// finds out.
		b.draft02.Store(false)
		return nil, err
	}
	s, err := flow.Dial(ctx, b.cfg.URL, cc)
	if err == nil || !draft02.Needed(err) {
		return s, err
	}
	b.log.Info("the MCP-Flow server speaks WebTransport draft-02; dialling again in that dialect", "server", redacted(b.cfg.URL), "refusal", err)
	if s, err = flow.Dial(ctx, b.cfg.URL, inDraft02(cc)); err == nil {
		b.draft02.Store(true)
	}
	return s, err
}

// inDraft02 is cc dialling draft-02 sessions with its TLS configuration
// and the QUIC times of cc's limits (spec §8): the handshake attempt, the idle
// timeout and the keep-alive that a long-lived front needs (without them a
// quiet session would end after quic-go's 30 s idle timeout).
func inDraft02(cc flow.ClientConfig) flow.ClientConfig {
	lim := cc.Limits
	idle := lim.PeerIdleTimeout
	if idle <= 0 {
		idle = flow.DefaultPeerIdleTimeout
	}
	keepAlive := lim.KeepAlivePeriod
	if keepAlive == 0 {
		keepAlive = flow.DefaultKeepAlivePeriod
	}
	handshake := lim.HandshakeTimeout
	if handshake <= 0 {
		handshake = 10 * time.Second
	}
	q := &quic.Config{HandshakeIdleTimeout: min(max(handshake, 5*time.Second), 10*time.Second),
		MaxIdleTimeout: idle, KeepAlivePeriod: max(keepAlive, 0)}
	cc.DialSession = draft02.FlowDialer(cc.TLSConfig, q)
	return cc
}
