package bridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The content rewrite of a front (spec §10), in one place: find the
// ref/stream blocks of a result, and replace each with MCP content (the
// original block an upstream bridge recorded, with its payload restored;
// inline text; an embedded resource with a base64 blob; past the inline
// limit, a resource_link to where the front offloaded the stream). The
// result is walked once, and every byte outside the replaced blocks is kept
// as it came, members in their order.

// spliceContent walks result once and replaces the blocks of its top-level
// "content" array for which replace returns replaced: each block's bytes
// are handed to replace, and only the replaced ones change. A result that
// is no object, or has no content array, comes back as it is.
func spliceContent(result []byte, replace func(block []byte) (out []byte, replaced bool, err error)) ([]byte, error) {
	var out []byte
	last := 0
	err := walkContent(result, func(v []byte, start, end int) error {
		repl, ok, err := replace(v)
		if err != nil {
			return err
		}
		if ok {
			out = append(append(out, result[last:start]...), repl...)
			last = end
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return result, nil
	}
	return append(out, result[last:]...), nil
}

// walkContent walks result once and hands each block of its top-level
// "content" array to visit, with the block's span in result. A result that
// is no object, or has no content array, visits nothing.
func walkContent(result []byte, visit func(block []byte, start, end int) error) error {
	d := jsontext.NewDecoder(bytes.NewBuffer(result))
	if d.PeekKind() != '{' {
		return nil
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return err
		}
		if name := tok.String(); name != "content" || d.PeekKind() != '[' {
			if err := d.SkipValue(); err != nil {
				return err
			}
			continue
		}
		if _, err := d.ReadToken(); err != nil {
			return err
		}
		for d.PeekKind() != ']' {
			v, err := d.ReadValue()
			if err != nil {
				return err
			}
			end := int(d.InputOffset())
			if err := visit(v, end-len(v), end); err != nil {
				return err
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return err
		}
	}
	return nil
}

// refBlock is a ref/stream content block as a front reads it (spec §5.2),
// with what an upstream bridge recorded in _meta[OriginalKey].
type refBlock struct {
	flow.StreamRef
	Meta map[string]json.RawMessage `json:"_meta"`
	// original is the block the ref replaced, without its payload, and
	// field where the payload goes ("text", "data", "resource.text",
	// "resource.blob"); nil when no upstream bridge recorded one.
	original []byte
	field    string
}

// parseRef reads block as a ref/stream block; ok is false for any other
// content. Only blocks that may be one are decoded (ref blocks are small:
// they carry no payload).
func parseRef(block []byte) (ref refBlock, ok bool) {
	if !bytes.Contains(block, []byte(`"`+protocol.ContentTypeRef+`"`)) {
		return ref, false
	}
	if json.Unmarshal(block, &ref) != nil || ref.Type != protocol.ContentTypeRef {
		return ref, false
	}
	if raw := ref.Meta[OriginalKey]; raw != nil {
		var o struct {
			Block json.RawMessage `json:"block"`
			Field string          `json:"field"`
		}
		if json.Unmarshal(raw, &o) == nil && len(o.Block) > 0 && o.Block[0] == '{' && o.Field != "" {
			ref.original, ref.field = o.Block, o.Field
		}
	}
	return ref, true
}

// inline rewrites a result with execution streams for a plain MCP client
// (ref/stream is no MCP content type): see the top of this file. A stream
// that fails fails the call: a truncated payload is never passed on.
func (b *core) inline(ctx context.Context, resp *flow.Response) (json.RawMessage, error) {
	if len(resp.Refs) == 0 {
		return resp.Result, nil
	}
	defer resp.Close()
	return spliceContent(resp.Result, func(block []byte) ([]byte, bool, error) {
		ref, ok := parseRef(block)
		if !ok {
			return nil, false, nil
		}
		out, err := b.inlineStream(ctx, resp, ref)
		return out, err == nil, err
	})
}

// inlineStream reads one execution stream and returns the block that
// replaces its ref.
func (b *core) inlineStream(ctx context.Context, resp *flow.Response, ref refBlock) ([]byte, error) {
	sr, err := resp.Stream(ctx, ref.StreamTag)
	if err != nil {
		return nil, fmt.Errorf("execution stream %d: %w", ref.StreamTag, err)
	}
	head, err := io.ReadAll(io.LimitReader(sr, b.cfg.InlineLimit+1))
	if err != nil {
		return nil, fmt.Errorf("execution stream %d failed: %w", ref.StreamTag, err)
	}
	mime := ref.MimeType
	if int64(len(head)) > b.cfg.InlineLimit {
		name := linkName(ref.StreamTag, mime)
		uri, n, err := b.front.offload(ctx, name, mime, io.MultiReader(bytes.NewReader(head), sr))
		if err != nil {
			return nil, fmt.Errorf("execution stream %d failed: %w", ref.StreamTag, err)
		}
		return linkBlock(uri, name, mime, n), nil
	}
	if err := drain(sr); err != nil { // nothing left: see it end cleanly
		return nil, fmt.Errorf("execution stream %d failed: %w", ref.StreamTag, err)
	}
	if ref.original != nil {
		// An upstream bridge moved this block's payload: put it back.
		return restore(ref.original, ref.field, head)
	}
	if isText(mime) && utf8.Valid(head) {
		out := append([]byte(`{"type":"text","text":`), quote(head)...)
		return append(out, '}'), nil
	}
	out := append([]byte(`{"type":"resource","resource":{"uri":`), quote(fmt.Sprintf("mcp-flow://stream/%s/%d", resp.ID.Raw(), ref.StreamTag))...)
	if mime != "" {
		out = append(append(out, `,"mimeType":`...), quote(mime)...)
	}
	out = append(out, `,"blob":"`...)
	out = base64.StdEncoding.AppendEncode(out, head)
	return append(out, `"}}`...), nil
}

// linkBlock is a resource_link content block naming an offloaded stream.
func linkBlock(uri, name, mime string, size int64) []byte {
	out := append([]byte(`{"type":"resource_link","uri":`), quote(uri)...)
	out = append(append(out, `,"name":`...), quote(name)...)
	if mime != "" {
		out = append(append(out, `,"mimeType":`...), quote(mime)...)
	}
	out = strconv.AppendInt(append(out, `,"size":`...), size, 10)
	return append(out, '}')
}

// linkName is a resource_link's name for the stream of tag with MIME type
// mt, as a file would be named: "stream-<tag>" and an extension for its
// type (".bin" when none is known), e.g. stream-1.bin. A client that saves
// the link under its name gets a sensible file name, never the URL's
// query.
func linkName(tag uint32, mt string) string {
	ext := ".bin"
	base, _, _ := strings.Cut(mt, ";")
	switch base = strings.TrimSpace(strings.ToLower(base)); base {
	case "", "application/octet-stream":
	case "text/plain":
		ext = ".txt"
	case "application/json":
		ext = ".json"
	default:
		if exts, _ := mime.ExtensionsByType(base); len(exts) > 0 {
			ext = exts[0]
		}
	}
	return "stream-" + strconv.FormatUint(uint64(tag), 10) + ext
}

// quote returns s as a JSON string (invalid UTF-8 replaced by U+FFFD; no
// HTML escaping).
func quote[T []byte | string](s T) []byte {
	out, _ := jsontext.AppendQuote(nil, s)
	return out
}

func isText(mime string) bool {
	return strings.HasPrefix(mime, "text/") || strings.HasPrefix(mime, "application/json")
}

// drain reads what is left of a stream (nothing, when the inline limit was
// not reached) so that it ends cleanly.
func drain(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}
