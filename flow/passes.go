package flow

import (
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
)

// side names the session's role in the passes it reports (mcpjson.Pass).
func (s *Session) side() string {
	if s.server {
		return "server"
	}
	return "client"
}

// passResult reports a pass over the result of m, when m is a response
// with one (mcpjson.Pass; counted by tests only, else one atomic load).
func (s *Session) passResult(site string, k mcpjson.PassKind, m jsonrpc.Message) {
	if !mcpjson.Counting() {
		return
	}
	if r, ok := m.(*jsonrpc.Response); ok && r.Error == nil && len(r.Result) > 0 {
		mcpjson.Pass(s.side(), site, k, r.Result)
	}
}

// passAppend reports what encoding m with c did to its result: a copy of
// its JSON text in JSON, a transcode in the binary encodings.
func (s *Session) passAppend(c codec.Codec, m jsonrpc.Message) {
	if !mcpjson.Counting() {
		return
	}
	k := mcpjson.Encode
	if c.Name() == codec.JSON {
		k = mcpjson.Copy
	}
	s.passResult("codec.Append", k, m)
}

// passDecode reports what reading m's frame did to its result: the frame
// is copied out of the reader's buffer (readLoop), and each codec checks
// its limits and well-formedness in one pass and decodes it (validates or
// transcodes) in another.
func (s *Session) passDecode(m jsonrpc.Message) {
	s.passResult("frame clone", mcpjson.Copy, m)
	s.passResult("codec.Decode limits", mcpjson.Scan, m)
	s.passResult("codec.Decode", mcpjson.Decode, m)
}
