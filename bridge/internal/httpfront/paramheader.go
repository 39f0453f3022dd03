package httpfront

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
)

// The Mcp-Param-* headers of a 2026-07-28 client's tools/call (spec §11.6;
// transports 2026-07-28, "Custom Headers from Tool Parameters", "Server
// Behavior for Custom Headers"): the front processes the body, so it holds
// each header that a tool's x-mcp-header arguments call for to the body
// (mcpjson.CheckParamHeaders) and refuses a missing or differing one with
// 400 and -32020, as it does Mcp-Name. The tools are the MCP-Flow server's,
// as its tools/list answers name them to this holder: each answer that
// passes on to one of the holder's clients replaces what the holder knows
// (learnFromAnswer), and a tools/call of a tool the holder does not know
// has the front ask the server itself first (fetch).

// maxToolPages bounds the tools/list pages the front follows on its own
// (nextCursor) to learn a holder's tools.
const maxToolPages = 16

// toolParams are what a holder knows of its tools' x-mcp-header arguments.
type toolParams struct {
	known  map[string]bool // the tools of the last tools/list, nil before one
	params map[string][]mcpjson.ParamHeader
}

// learnTools takes in the tools of one tools/list result (one page: its tools
// are added, the others kept).
func (s *httpSession) learnTools(result []byte) {
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	ps := mcpjson.ToolsParamHeaders(result)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tools.known == nil {
		s.tools = toolParams{known: map[string]bool{}, params: map[string][]mcpjson.ParamHeader{}}
	}
	for _, t := range r.Tools {
		s.tools.known[t.Name] = true
		if p, ok := ps[t.Name]; ok {
			s.tools.params[t.Name] = p
		} else {
			delete(s.tools.params, t.Name)
		}
	}
}

// learnFromAnswer learns from the answer e (one response, as written) to
// a client's request m when m is tools/list.
func (s *httpSession) learnFromAnswer(m *jsonrpc.Request, resp *jsonrpc.Response, e []byte) {
	if m.Method != "tools/list" || resp.Error != nil {
		return
	}
	ms, err := mcpjson.ReadObject(e, nil)
	if err != nil {
		return
	}
	if res := mcpjson.Find(ms, "result"); res != nil {
		s.learnTools(res.Value)
	}
}

// toolParamsOf returns the x-mcp-header arguments of tool, and whether the
// holder knows the tool.
func (s *httpSession) toolParamsOf(tool string) ([]mcpjson.ParamHeader, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools.params[tool], s.tools.known[tool]
}

// fetchTools asks the MCP-Flow server for its tools/list in the name of
// the client whose request m is (its _meta), page by page up to
// maxToolPages, and learns them.
func (s *httpSession) fetchTools(ctx context.Context, m *jsonrpc.Request) error {
	ms, err := mcpjson.ReadObject(m.Params, nil)
	if err != nil {
		return err
	}
	// The request's _meta speaks for the client (version, clientInfo,
	// clientCapabilities); its progressToken is the call's, not this list's.
	meta := json.RawMessage(`{}`)
	if v := mcpjson.Find(ms, "_meta"); v != nil {
		if mm, err := mcpjson.ReadObject(v.Value, nil); err == nil {
			meta = mcpjson.AppendObject(nil, mm, func(x *mcpjson.Member) ([]byte, bool) {
				return nil, !strings.HasPrefix(x.Name, "io.modelcontextprotocol/")
			})
		}
	}
	cursor := ""
	for range maxToolPages {
		p := map[string]any{"_meta": meta}
		if cursor != "" {
			p["cursor"] = cursor
		}
		req, err := jsonrpc.NewRequest(jsonrpc.StringID("mcp-flow-front/tools-list"), "tools/list", p)
		if err != nil {
			return err
		}
		rep := s.core.Answer(ctx, ctx, req)
		if rep == nil {
			return ctx.Err()
		}
		resp, e := rep.Encode()
		if resp.Error != nil {
			return resp.Error
		}
		s.learnFromAnswer(req, resp, e)
		var next struct {
			NextCursor string `json:"nextCursor"`
		}
		if res := mcpjson.Find(mustRead(e), "result"); res != nil {
			_ = json.Unmarshal(res.Value, &next)
		}
		if next.NextCursor == "" {
			return nil
		}
		cursor = next.NextCursor
	}
	return fmt.Errorf("tools/list has more than %d pages", maxToolPages)
}

// mustRead reads an object the front wrote itself, nil when it is not one.
func mustRead(e []byte) []mcpjson.Member {
	ms, _ := mcpjson.ReadObject(e, nil)
	return ms
}

// paramMismatch holds a tools/call's Mcp-Param-* headers to its arguments
// for the tool's x-mcp-header annotations, learning the tools first when
// the holder does not know the one called. It returns why not, "" when
// they agree or when the tools cannot be learned (the server's own
// answer to the call then says what is wrong).
func (s *httpSession) paramMismatch(ctx context.Context, r *http.Request, m *jsonrpc.Request) string {
	if m.Method != "tools/call" {
		return ""
	}
	ms, err := mcpjson.ReadObject(m.Params, nil)
	if err != nil {
		return ""
	}
	tool := mcpjson.String(ms, "name")
	ps, known := s.toolParamsOf(tool)
	if !known {
		if err := s.fetchTools(ctx, m); err != nil {
			s.front.log.Debug("the tools of a 2026-07-28 client could not be learned: its Mcp-Param-* headers go unchecked", "err", err)
		}
		ps, _ = s.toolParamsOf(tool)
	}
	if len(ps) == 0 {
		return ""
	}
	args := []byte("{}")
	if a := mcpjson.Find(ms, "arguments"); a != nil {
		args = a.Value
	}
	return mcpjson.CheckParamHeaders(ps, args, r.Header.Values)
}
