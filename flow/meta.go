package flow

import (
	"encoding/json"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// MetaVersion returns a request's
// params._meta["io.modelcontextprotocol/protocolVersion"] ("" when there is
// none): the MCP revision a 2026-07-28 request names (spec §11.4).
func MetaVersion(params json.RawMessage) string {
	if len(params) == 0 || params[0] != '{' {
		return ""
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(p.Meta[protocol.MetaProtocolVersion], &v)
	return v
}

// IsStatelessRequest reports whether m is a request of the 2026-07-28 era:
// server/discover, or one whose _meta names a protocol version (spec
// §11.4).
func IsStatelessRequest(m *jsonrpc.Request) bool {
	return m.Method == protocol.MethodDiscover || MetaVersion(m.Params) != ""
}
