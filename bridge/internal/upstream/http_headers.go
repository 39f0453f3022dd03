package upstream

import (
	"encoding/json"
	"net/http"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
)

// The headers of a request to a 2026-07-28 HTTP upstream (spec §10,
// "Eras"): the routing headers of every request, and a tools/call's
// Mcp-Param-* headers, from the tool schemas the upstream's tools/list
// answers named.

// routingHeaders are a 2026-07-28 request's Mcp-Method and Mcp-Name
// (transports 2026-07-28, "Standard Request Headers"); a name that is not
// plain visible ASCII goes in the Base64 sentinel form.
func routingHeaders(r *jsonrpc.Request) http.Header {
	h := http.Header{"Mcp-Method": {r.Method}}
	var p struct {
		Name *string `json:"name"`
		URI  *string `json:"uri"`
	}
	switch r.Method {
	case "tools/call", "prompts/get", "resources/read":
		if json.Unmarshal(r.Params, &p) != nil {
			return h
		}
		v := p.Name
		if r.Method == "resources/read" {
			v = p.URI
		}
		if v != nil {
			h.Set("Mcp-Name", mcpjson.HeaderValue(*v))
		}
	}
	return h
}

// requestHeaders are routingHeaders and, on a tools/call, the Mcp-Param-* (spec §10, "Eras")
// headers of the tool's x-mcp-header arguments (transports 2026-07-28,
// "Custom Headers from Tool Parameters", "Client Behavior"). The tool's
// inputSchema is the one of the upstream's last tools/list answer that
// named it (learnTools): the bridge sends no tools/list of its own, so a
// tool the session's clients never listed gets no Mcp-Param-* header, and
// the upstream may refuse that call with -32020, which goes back to the
// client, whose own retry after a tools/list (as the spec asks of it)
// then carries them.
func (c *httpConn) requestHeaders(r *jsonrpc.Request) http.Header {
	h := routingHeaders(r)
	if r.Method != "tools/call" {
		return h
	}
	ms, err := mcpjson.ReadObject(r.Params, nil)
	if err != nil {
		return h
	}
	c.mu.Lock()
	ps := c.paramHeaders[mcpjson.String(ms, "name")]
	c.mu.Unlock()
	if args := mcpjson.Find(ms, "arguments"); args != nil && ps != nil {
		for k, v := range mcpjson.ParamHeaderValues(ps, args.Value) {
			h.Set(k, v)
		}
	}
	return h
}

// dropInvalidTools takes out of a 2026-07-28 tools/list answer the tools
// whose x-mcp-header annotations break the spec's constraints, as a
// Streamable HTTP client must (transports 2026-07-28, "Client Behavior";
// spec §11.6): with one warning per tool and reason for the upstream, so
// that its operator sees why a tool is missing.
func (c *httpConn) dropInvalidTools(r *jsonrpc.Response) []mcpjson.InvalidTool {
	res, dropped := mcpjson.DropInvalidTools(r.Result)
	r.Result = res
	for _, t := range dropped {
		if _, seen := c.warned.LoadOrStore(t.Name+"\x00"+t.Err.Error(), true); !seen {
			c.log.Warn("upstream tool left out of tools/list: its x-mcp-header annotations are invalid (MCP 2026-07-28 transports, Client Behavior)",
				"tool", t.Name, "reason", t.Err.Error())
		}
	}
	return dropped
}

// learnTools takes the invalid tools out of a tools/list answer
// (dropInvalidTools) and keeps the x-mcp-header annotations of the others
// (requestHeaders), by tool name; a later page or list replaces a tool's
// entry.
func (c *httpConn) learnTools(r *jsonrpc.Response) {
	c.mu.Lock()
	asked := c.toolLists[r.ID.Raw()]
	c.mu.Unlock()
	if !asked || r.Result == nil {
		return
	}
	dropped := c.dropInvalidTools(r)
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if json.Unmarshal(r.Result, &res) != nil {
		return
	}
	ps := mcpjson.ToolsParamHeaders(r.Result)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range dropped {
		delete(c.paramHeaders, t.Name) // valid in an earlier list, perhaps
	}
	for _, t := range res.Tools {
		if p, ok := ps[t.Name]; ok {
			c.paramHeaders[t.Name] = p
		} else {
			delete(c.paramHeaders, t.Name)
		}
	}
}
