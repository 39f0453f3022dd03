package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// Opening a session's upstream connection and its handshake (spec §10,
// "Eras"): a 2025 client's initialize passed on, a 2026-07-28 session's
// connection opened in the bridge's own name, the server/discover probe.

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
	up, err := mcpjson.EditObject(params, mcpjson.Delete("transport"))
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
		return c.initFromDiscover(disc, ip.ProtocolVersion)
	}
	resp, err := c.call(ctx, protocol.MethodInitialize, up)
	var je *jsonrpc.Error
	if err != nil && u.protocol == UpstreamAuto && errors.As(err, &je) {
		// Refused: perhaps a 2026-07-28-only server (spec §10, "Eras").
		if disc, ok := c.probe(ctx, ip.Capabilities, ip.ClientInfo); ok {
			u.log.Info("upstream refused initialize but speaks 2026-07-28: translating for this 2025 session", "initialize error", je.Message)
			return c.initFromDiscover(disc, ip.ProtocolVersion)
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

// initFromDiscover answers a 2025 client's initialize from a 2026-07-28
// upstream's DiscoverResult and keeps its capabilities, which say what the
// subscription held for the session asks for (listen.go).
func (c *upConn) initFromDiscover(disc json.RawMessage, clientVersion string) (*flow.InitializeResult, error) {
	res, err := initFromDiscover(disc, clientVersion)
	if err == nil {
		c.upCaps = res.Capabilities
	}
	return res, err
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

// probe asks the upstream server/discover, within the probe timeout, and
// reports whether it speaks 2026-07-28 (spec §10: a DiscoverResult naming
// it; any error or silence means a 2025 server).
func (c *upConn) probe(ctx context.Context, caps, info json.RawMessage) (json.RawMessage, bool) {
	c.setModern(true)
	pctx, cancel := context.WithTimeout(ctx, c.u.probeTimeout)
	defer cancel()
	res, err := c.call(pctx, protocol.MethodDiscover, discoverParams(caps, info))
	var d struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err == nil && json.Unmarshal(res, &d) == nil && slices.Contains(d.SupportedVersions, protocol.MCP20260728) {
		c.u.log.Debug("upstream speaks 2026-07-28", "supportedVersions", d.SupportedVersions)
		return res, true
	}
	c.u.log.Debug("upstream does not speak 2026-07-28 (server/discover probe)", "err", err)
	c.setModern(false)
	return nil, false
}

// initializeLegacy runs the 2025 handshake with the upstream for a
// 2026-07-28 session (spec §10, "Eras"): in the bridge's own name
// (bridgeClientInfo) with empty capabilities, never those of a client. A
// 2026 client takes no server requests through it anyway: the 2025
// server's sampling or elicitation toward it is answered -32601
// (errNoServerRequests).
func (c *upConn) initializeLegacy(ctx context.Context) error {
	params, _ := json.Marshal(map[string]json.RawMessage{
		"protocolVersion": json.RawMessage(`"` + protocol.MCPLatest + `"`),
		"capabilities":    json.RawMessage("{}"),
		"clientInfo":      bridgeClientInfo,
	})
	res, err := c.call(ctx, protocol.MethodInitialize, params)
	if err != nil {
		return err
	}
	c.initRes = res
	n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodInitialized, nil)
	_, err = c.send(ctx, n)
	return err
}
