package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The upstream's MCP era (spec §10, "Eras"): the value of
// StdioUpstreamConfig.Protocol and HTTPUpstreamConfig.Protocol
// (-upstream-protocol).
const (
	// UpstreamAuto (or "") follows the client's era and falls back to the
	// other one when the upstream refuses it: a 2025 session sends
	// initialize first, then server/discover if initialize is refused; a
	// 2026-07-28 session probes with server/discover first, then falls back
	// to initialize.
	UpstreamAuto = "auto"
	// UpstreamModern speaks only 2026-07-28 to the upstream.
	UpstreamModern = protocol.MCP20260728
	// UpstreamLegacy speaks only the 2025 revisions (initialize) to it.
	UpstreamLegacy = "2025"
)

// DefaultProbeTimeout is how long the upstream's answer to a
// server/discover probe is awaited before it is taken as a 2025 server that
// ignores requests before initialize (-upstream-probe-timeout; spec §8).
const DefaultProbeTimeout = 5 * time.Second

// metaClientInfo is the _meta key of a 2026-07-28 request's client identity.
const metaClientInfo = "io.modelcontextprotocol/clientInfo"

// bridgeClientInfo is the bridge's own identity (clientInfo), which it
// gives a 2025 upstream it initializes for a 2026-07-28 session, and the
// server/discover probe of that session (spec §10, "Eras"). That upstream
// session serves every 2026 client of the MCP-Flow session (all the
// clients of a front's stateless path, say): no client's own identity or
// capabilities speak for the others.
var bridgeClientInfo = json.RawMessage(`{"name":"mcp-flow-server","version":"` + protocol.VersionHello + `"}`)

// normProtocol checks an upstream era setting.
func normProtocol(p string) (string, error) {
	switch {
	case p == "" || p == UpstreamAuto:
		return UpstreamAuto, nil
	case p == UpstreamModern:
		return UpstreamModern, nil
	case p == UpstreamLegacy || slices.Contains(protocol.MCPVersions(), p):
		return UpstreamLegacy, nil
	}
	return "", fmt.Errorf("upstream protocol %q: want auto, %s or 2025 (any of %s)", p, UpstreamModern, strings.Join(protocol.MCPVersions(), ", "))
}

// modernLink is a link that speaks differently to a 2026-07-28 upstream
// (the HTTP upstream: routing headers, no session, cancellation by closing
// the stream). The stdio link needs nothing: each message carries its _meta.
type modernLink interface {
	setModern(bool)
}

func (c *upConn) setModern(v bool) {
	c.upModern.Store(v)
	if l, ok := c.link.(modernLink); ok {
		l.setModern(v)
	}
}

// metaOf returns the _meta members of a request's params.
func metaOf(params json.RawMessage) map[string]json.RawMessage {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if len(params) > 0 && params[0] == '{' {
		_ = json.Unmarshal(params, &p)
	}
	if p.Meta == nil {
		p.Meta = map[string]json.RawMessage{}
	}
	return p.Meta
}

// editMeta rewrites params' _meta with edit (an empty _meta is left out);
// the other members of params keep their bytes.
func editMeta(params json.RawMessage, edit func(map[string]json.RawMessage)) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &m); err != nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params must be an object: "+err.Error())
		}
	}
	meta := metaOf(params)
	edit(meta)
	if len(meta) == 0 {
		delete(m, "_meta")
	} else {
		m["_meta"], _ = json.Marshal(meta)
	}
	return json.Marshal(m)
}

// discoverParams are the params of the bridge's server/discover probe: the
// client's own _meta (version, capabilities, identity) when it has one.
func discoverParams(caps, info json.RawMessage) json.RawMessage {
	p, _ := editMeta(nil, func(m map[string]json.RawMessage) { addModernMeta(m, caps, info) })
	return p
}

// addModernMeta puts the 2026-07-28 members into a request's _meta.
func addModernMeta(m map[string]json.RawMessage, caps, info json.RawMessage) {
	m[protocol.MetaProtocolVersion] = json.RawMessage(`"` + protocol.MCP20260728 + `"`)
	if len(caps) == 0 {
		caps = json.RawMessage("{}")
	}
	m[protocol.MetaClientCapabilities] = caps
	if len(info) > 0 {
		m[metaClientInfo] = info
	}
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

// initFromDiscover answers a 2025 client's initialize from a 2026-07-28
// upstream's DiscoverResult (spec §10, "Eras"): the client's version if
// the bridge speaks it, the upstream's capabilities, serverInfo and
// instructions.
func initFromDiscover(disc json.RawMessage, clientVersion string) (*flow.InitializeResult, error) {
	var d struct {
		Capabilities json.RawMessage            `json:"capabilities"`
		Instructions string                     `json:"instructions"`
		Meta         map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(disc, &d); err != nil {
		return nil, fmt.Errorf("upstream server/discover result: %w", err)
	}
	res := &flow.InitializeResult{ProtocolVersion: protocol.MCPLatest, Capabilities: d.Capabilities, Instructions: d.Instructions}
	if slices.Contains(protocol.MCPVersions(), clientVersion) {
		res.ProtocolVersion = clientVersion
	}
	if len(res.Capabilities) == 0 {
		res.Capabilities = json.RawMessage("{}")
	}
	if err := json.Unmarshal(d.Meta[protocol.MetaServerInfo], &res.ServerInfo); err != nil || res.ServerInfo.Name == "" {
		res.ServerInfo = flow.Implementation{Name: "upstream", Version: "unknown"}
	}
	return res, nil
}

// discoverFromInit answers a 2026-07-28 client's server/discover from a
// 2025 upstream's InitializeResult (spec §10, "Eras").
func discoverFromInit(init json.RawMessage) (json.RawMessage, error) {
	var r struct {
		Capabilities json.RawMessage `json:"capabilities"`
		ServerInfo   json.RawMessage `json:"serverInfo"`
		Instructions string          `json:"instructions,omitempty"`
	}
	if err := json.Unmarshal(init, &r); err != nil {
		return nil, fmt.Errorf("upstream initialize result: %w", err)
	}
	if len(r.Capabilities) == 0 {
		r.Capabilities = json.RawMessage("{}")
	}
	out := map[string]any{
		"supportedVersions": protocol.MCPStatelessVersions(),
		"capabilities":      r.Capabilities,
		"resultType":        "complete",
	}
	if len(r.ServerInfo) > 0 {
		out["_meta"] = map[string]json.RawMessage{protocol.MetaServerInfo: r.ServerInfo}
	}
	if r.Instructions != "" {
		out["instructions"] = r.Instructions
	}
	return json.Marshal(out)
}

// errInputRequired is the answer to a 2025 session whose request got a
// 2026-07-28 multi round-trip result from the upstream (spec §10, "Eras").
func errInputRequired(method string) *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeInternalError, "the upstream answered "+method+
		" with a 2026-07-28 multi round-trip result (resultType input_required), which a 2025 session cannot express (spec §10)")
}

// errNoServerRequests is the upstream's answer when a 2025 upstream sends a
// request (sampling, elicitation, roots) toward a 2026-07-28 client, which
// has no server-initiated requests (spec §10, "Eras").
func errNoServerRequests(method string) *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "the MCP-Flow client speaks MCP 2026-07-28, which has no server-initiated "+method+
		" request; the bridge cannot pass it on (spec §10)")
}

// takesServerRequests returns the first server-request capability (roots,
// sampling, elicitation) a 2026-07-28 request's _meta clientCapabilities
// declares, or "".
func takesServerRequests(params json.RawMessage) string {
	var caps map[string]json.RawMessage
	if json.Unmarshal(metaOf(params)[protocol.MetaClientCapabilities], &caps) != nil {
		return ""
	}
	for _, k := range []string{"sampling", "elicitation", "roots"} {
		if _, ok := caps[k]; ok {
			return k
		}
	}
	return ""
}

// errLossyDiscover answers a 2026-07-28 client's server/discover when the
// upstream speaks 2025 only and the client declares a capability for
// server-initiated requests (spec §10, "Eras"): through a 2026-07-28
// session those requests could not reach it, so the bridge does not claim
// 2026-07-28 for it. UnsupportedProtocolVersionError names the 2025
// revisions the chain speaks with this server: a dual-era client falls back
// to initialize and keeps its server requests, as it would directly.
func errLossyDiscover(capability string) *jsonrpc.Error {
	e := jsonrpc.NewError(protocol.CodeUnsupportedProtocolVersion, "the upstream speaks MCP 2025 only, and this client takes server requests ("+
		capability+") that a 2026-07-28 session cannot carry: use initialize (spec §10)")
	e.Data, _ = json.Marshal(map[string]any{"supported": protocol.MCPVersions(), "requested": protocol.MCP20260728})
	return e
}

// isInputRequired reports whether a result is a 2026-07-28 InputRequiredResult.
func isInputRequired(res json.RawMessage) bool {
	if len(res) == 0 || res[0] != '{' || !strings.Contains(string(res), "input_required") {
		return false
	}
	var r struct {
		ResultType string `json:"resultType"`
	}
	return json.Unmarshal(res, &r) == nil && r.ResultType == "input_required"
}

// modernMetaKeys are the 2026-07-28 _meta keys a 2025 upstream does not
// know; the bridge takes them out of a 2026 client's requests.
var modernMetaKeys = []string{protocol.MetaProtocolVersion, protocol.MetaClientCapabilities, metaClientInfo, "io.modelcontextprotocol/logLevel"}

// translate maps a request's params to the upstream's era (spec §10,
// "Eras"): a 2026-07-28 client's lose their 2026 _meta members toward a
// 2025 upstream, a 2025 client's gain them (from its initialize) toward a
// 2026 one. A 2026 client's server/discover to a 2025 upstream is answered
// here, from the upstream's initialize result.
func (c *upConn) translate(req *flow.Request) (params, answer json.RawMessage, err error) {
	switch up := c.upModern.Load(); {
	case c.clientModern && !up:
		if req.Method == protocol.MethodDiscover {
			if m := takesServerRequests(req.Params); m != "" {
				return nil, nil, errLossyDiscover(m)
			}
			a, err := discoverFromInit(c.initRes)
			return nil, a, err
		}
		p, err := editMeta(req.Params, func(m map[string]json.RawMessage) {
			for _, k := range modernMetaKeys {
				delete(m, k)
			}
		})
		return p, nil, err
	case !c.clientModern && up:
		p, err := editMeta(req.Params, func(m map[string]json.RawMessage) { addModernMeta(m, c.clientCaps, c.clientInfo) })
		return p, nil, err
	}
	return req.Params, nil, nil
}
