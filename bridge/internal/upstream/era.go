package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// Translation between MCP's eras at the upstream (spec §10, "Eras"): the era
// settings, and each request and answer mapped between a 2025 side and a
// 2026-07-28 side.

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

// CheckUpstreamProtocol reports whether p names an upstream era
// (StdioUpstreamConfig.Protocol, HTTPUpstreamConfig.Protocol).
func CheckUpstreamProtocol(p string) error {
	_, err := normProtocol(p)
	return err
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

// editMeta applies edits to params' _meta (mcpjson.EditMeta: members keep
// their order and bytes); params that are no object are -32602.
func editMeta(params json.RawMessage, edits ...mcpjson.Edit) (json.RawMessage, error) {
	p, err := mcpjson.EditMeta(params, edits...)
	if err != nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params must be an object: "+err.Error())
	}
	return p, nil
}

// discoverParams are the params of the bridge's server/discover probe: the
// client's own _meta (version, capabilities, identity) when it has one.
func discoverParams(caps, info json.RawMessage) json.RawMessage {
	p, _ := editMeta(nil, modernMeta(caps, info)...)
	return p
}

// modernMeta are the edits that put the 2026-07-28 members into a
// request's _meta.
func modernMeta(caps, info json.RawMessage) []mcpjson.Edit {
	if len(caps) == 0 {
		caps = json.RawMessage("{}")
	}
	edits := []mcpjson.Edit{
		mcpjson.Set(protocol.MetaProtocolVersion, []byte(`"`+protocol.MCP20260728+`"`)),
		mcpjson.Set(protocol.MetaClientCapabilities, caps),
	}
	if len(info) > 0 {
		edits = append(edits, mcpjson.Set(metaClientInfo, info))
	}
	return edits
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
	caps, err := mcpjson.ReadObject(mcpjson.MetaValue(params, protocol.MetaClientCapabilities), nil)
	if err != nil {
		return ""
	}
	for _, k := range []string{"sampling", "elicitation", "roots"} {
		if mcpjson.Find(caps, k) != nil {
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
	if len(res) == 0 || res[0] != '{' || !bytes.Contains(res, []byte("input_required")) {
		return false
	}
	ms, err := mcpjson.ReadObject(res, nil)
	return err == nil && mcpjson.String(ms, "resultType") == "input_required"
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
		edits := make([]mcpjson.Edit, len(modernMetaKeys))
		for i, k := range modernMetaKeys {
			edits[i] = mcpjson.Delete(k)
		}
		p, err := editMeta(req.Params, edits...)
		return p, nil, err
	case !c.clientModern && up:
		p, err := editMeta(req.Params, modernMeta(c.clientCaps, c.clientInfo)...)
		return p, nil, err
	}
	return req.Params, nil, nil
}
