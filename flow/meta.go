package flow

import (
	"encoding/json"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// MetaVersion returns a request's
// params._meta["io.modelcontextprotocol/protocolVersion"] ("" when there is
// none): the MCP revision a 2026-07-28 request names (spec §11.4).
func MetaVersion(params json.RawMessage) string {
	v, _ := mcpjson.Unquote(mcpjson.MetaValue(params, protocol.MetaProtocolVersion))
	return string(v)
}

// IsStatelessRequest reports whether m is a request of the 2026-07-28 era:
// server/discover, or one whose _meta names a protocol version (spec
// §11.4).
func IsStatelessRequest(m *jsonrpc.Request) bool {
	return m.Method == protocol.MethodDiscover || MetaVersion(m.Params) != ""
}
