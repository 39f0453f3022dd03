package core

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The MCP 2026-07-28 (stateless) side of the core (spec §11.6): a client of
// that revision sends no initialize; each request carries its protocol
// version and capabilities in _meta. The core then holds one MCP-Flow
// session of that revision (flow.ClientConfig.ProtocolVersion), dialled on
// the first request and again on the next request after it was lost (it
// holds no state of the client's), and every request goes on it with its
// _meta as the client wrote it.

// mcpVersions are the MCP revisions the fronts speak, newest first: what an
// UnsupportedProtocolVersionError lists.
func mcpVersions() []string {
	return append(protocol.MCPStatelessVersions(), HTTPVersions...)
}

// HTTPVersions are the MCP revisions of the 2025 era the fronts speak:
// those the HTTP front accepts in MCP-Protocol-Version.
var HTTPVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// UnsupportedVersion is UnsupportedProtocolVersionError (-32022, 2026-07-28
// schema) for the version v, listing the versions the fronts speak.
func UnsupportedVersion(id jsonrpc.ID, v string) *jsonrpc.Response {
	e := jsonrpc.NewError(protocol.CodeUnsupportedProtocolVersion, fmt.Sprintf("unsupported protocol version %q (spec §11.6)", v))
	e.Data, _ = json.Marshal(map[string]any{"supported": mcpVersions(), "requested": v})
	return jsonrpc.NewErrorResponse(id, e)
}

// StatelessRefusal is the answer to a request of a 2026-07-28 client that
// does not go to the server (nil: it goes): initialize, which that revision
// does not have, and a request that names no supported version in its _meta
// (server/discover may name none).
func StatelessRefusal(m *jsonrpc.Request) *jsonrpc.Response {
	if m.Method == protocol.MethodInitialize {
		return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest,
			"this client speaks MCP 2026-07-28 (its first request said so): initialize is not part of it"))
	}
	v := flow.MetaVersion(m.Params)
	if v == "" && m.Method == protocol.MethodDiscover {
		return nil
	}
	if !slices.Contains(protocol.MCPStatelessVersions(), v) {
		return UnsupportedVersion(m.ID, v)
	}
	return nil
}

// takeStateless reports whether the client's request m goes the 2026-07-28
// way: the client's first request was of that era (then it stays so), or m
// is and the client has not initialized. An initialize selects the 2025
// era whatever came before it (a dual-era client falls back to it after a
// server/discover probe; 2026-07-28 versioning): the stateless session, if
// any, is shut down.
func (b *Core) takeStateless(m *jsonrpc.Request) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case m.Method == protocol.MethodInitialize && b.stateless && b.initReq == nil:
		b.stateless, b.proto = false, ""
		if old := b.sess; old != nil {
			b.setSessionLocked(nil)
			b.bg.Add(1)
			go func() {
				defer b.bg.Done()
				ctx, cancel := context.WithTimeout(b.stop, 10*time.Second)
				defer cancel()
				if err := old.Shutdown(ctx, "the client chose MCP's 2025 era (initialize)"); err != nil {
					b.log.Debug("shutdown of the 2026-07-28 session", "err", err)
				}
			}()
		}
	case !b.stateless && b.initReq == nil && flow.IsStatelessRequest(m):
		b.stateless, b.proto = true, protocol.MCP20260728
	}
	return b.stateless
}

// cacheable are the methods whose 2026-07-28 result is a CacheableResult
// (schema 2026-07-28: ttlMs and cacheScope required).
var cacheable = map[string]bool{
	protocol.MethodDiscover: true, "tools/list": true, "prompts/list": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
}

// withCacheHints adds the most cautious cache hints, ttlMs 0 (stale at once)
// and cacheScope "private" (never shared across authorization contexts),
// last, to a cacheable result of a 2026-07-28 request that lacks them: an
// MCP-Flow server's handlers need not know the era (spec §11.6), and a
// client of that revision refuses a list result without them. Everything
// else in the result is kept as it came (mcpjson.EditObject); other
// results come back as they are.
func withCacheHints(method string, result *mcpjson.Splice) *mcpjson.Splice {
	if !cacheable[method] {
		return result
	}
	out, err := mcpjson.EditObject(result.Bytes(), mcpjson.Add("ttlMs", []byte("0")), mcpjson.Add("cacheScope", []byte(`"private"`)))
	if err != nil {
		return result
	}
	return mcpjson.NewSplice(out)
}
