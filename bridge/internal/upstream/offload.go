package upstream

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
)

// Content of the upstream's results past the threshold, moved onto
// execution streams (spec §10): each result is walked once and spliced.

// offload moves content larger than the threshold onto execution streams:
// text, image and audio data, and embedded resource blobs and texts. It
// splices the result's text (spec §10): one walk over it (each block's
// members read as the walk meets them), and every member keeps its place
// and its bytes.
func (u *Upstream) offload(req *flow.Request, result json.RawMessage) (json.RawMessage, error) {
	if len(result) < u.threshold {
		return result, nil
	}
	// The whole walk first: nothing moves out of a result that does not
	// read.
	var blocks []mcpjson.Block
	if err := mcpjson.ReadContent(result, func(n string) bool { return n == "resource" }, func(b mcpjson.Block) error {
		if b.Members != nil {
			blocks = append(blocks, b)
		}
		return nil
	}); err != nil {
		return result, nil
	}
	out := mcpjson.NewSplice(result)
	for _, b := range blocks {
		if ref, ok := u.moveOut(req, b.Members); ok {
			out.Replace(b.Start, b.End, ref)
		}
	}
	if !out.Changed() {
		return result, nil
	}
	return out.Bytes(), nil
}

// moveOut puts a content block's payload on an execution stream when it is
// over the threshold (decoded bytes for base64 data and blobs, UTF-8 for
// text), and returns the ref/stream block that replaces it.
func (u *Upstream) moveOut(req *flow.Request, block []mcpjson.Member) ([]byte, bool) {
	str := mcpjson.String
	big := func(ms []mcpjson.Member, name string, base64ed bool) ([]byte, bool) {
		m := mcpjson.Find(ms, name)
		if m == nil || len(m.Value) < u.threshold {
			return nil, false
		}
		s, ok := mcpjson.Unquote(m.Value)
		if !ok || !base64ed {
			return s, ok
		}
		b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(b, s)
		return b[:n], err == nil
	}
	var (
		payload     []byte
		mime, field string
		ok          bool
	)
	switch str(block, "type") {
	case "text":
		payload, ok = big(block, "text", false)
		mime, field = "text/plain; charset=utf-8", "text"
	case "image", "audio":
		payload, ok = big(block, "data", true)
		mime, field = orDefault(str(block, "mimeType"), "application/octet-stream"), "data"
	case "resource":
		r := mcpjson.Find(block, "resource")
		if r == nil || r.Sub == nil {
			return nil, false
		}
		rmime := str(r.Sub, "mimeType")
		if payload, ok = big(r.Sub, "blob", true); ok {
			mime, field = orDefault(rmime, "application/octet-stream"), "resource.blob"
		} else if payload, ok = big(r.Sub, "text", false); ok {
			mime, field = orDefault(rmime, "text/plain; charset=utf-8"), "resource.text"
		}
	}
	if !ok {
		return nil, false
	}
	w, err := req.OpenStream(mime)
	if err != nil {
		return nil, false // the limit is reached: inline is still correct
	}
	go func() {
		if _, err := w.Write(payload); err != nil {
			w.Fail(err)
			return
		}
		_ = w.Close()
	}()
	// The original block, its payload a null placeholder, rides along so
	// that a bridge to plain MCP can put it back together exactly.
	outer, inner, _ := strings.Cut(field, ".")
	orig := mcpjson.AppendObject(nil, block, func(m *mcpjson.Member) ([]byte, bool) {
		switch {
		case m.Name != outer:
			return nil, false
		case inner == "":
			return []byte("null"), false
		}
		return mcpjson.AppendObject(nil, m.Sub, func(m *mcpjson.Member) ([]byte, bool) {
			if m.Name == inner {
				return []byte("null"), false
			}
			return nil, false
		}), false
	})
	meta := jsonrpc.AppendQuoted(append(make([]byte, 0, len(orig)+len(mcpjson.OriginalKey)+40), '{'), mcpjson.OriginalKey)
	meta = append(append(append(meta, `:{"block":`...), orig...), `,"field":`...)
	ref := w.Ref()
	ref.Meta = append(jsonrpc.AppendQuoted(meta, field), "}}"...)
	return mcpjson.AppendRef(nil, ref), true
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
