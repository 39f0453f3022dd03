package core

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/mcpjson"
)

// The content rewrite of a front (spec §10), in one place: replace each
// ref/stream block of a result with MCP content (the original block an
// upstream bridge recorded, with its payload restored; inline text; an
// embedded resource with a base64 blob; past the inline limit, a
// resource_link to where the front offloaded the stream). The result is
// not read again: flow.Response.Refs hands out each ref with its span in
// the result, and every byte outside the replaced blocks is kept as it
// came, members in their order. The spliced result is written once, by
// the front, straight into its output (Front.EmitResult).

// inline rewrites a result with execution streams for a plain MCP client
// (ref/stream is no MCP content type): see the top of this file. A stream
// that fails fails the call: a truncated payload is never passed on. A
// front that keeps raw streams (Keeper) names each with a resource_link
// instead, and its stream is left for the client to read.
func (b *Core) inline(ctx context.Context, s *flow.Session, resp *flow.Response) (*mcpjson.Splice, error) {
	out := mcpjson.NewSplice(resp.Result)
	if len(resp.Refs) == 0 {
		return out, nil
	}
	keeper, _ := b.front.(Keeper)
	var kept []string
	for _, ref := range resp.Refs {
		if keeper != nil {
			if block, _ := original(ref); block == nil {
				if uri, ok := keeper.Keep(s, resp, ref); ok {
					kept = append(kept, uri)
					out.Replace(ref.Start, ref.End, linkBlock(uri, linkName(ref.StreamTag, ref.MimeType), ref.MimeType, -1))
					continue
				}
			}
		}
		block, err := b.inlineStream(ctx, resp, ref)
		if err != nil {
			for _, uri := range kept {
				keeper.Drop(uri)
			}
			_ = resp.Close()
			return nil, err
		}
		out.ReplaceSplice(ref.Start, ref.End, block)
	}
	if kept == nil {
		_ = resp.Close()
	}
	return out, nil
}

// Keeper is a Front that hands raw execution streams (those no upstream
// bridge moved out of a block: no original recorded) to its client as
// they are, to be read when the client chooses (package bridge/sdkflow's
// ClientTransport.KeepStreams, spec §10). Keep takes the stream of ref and
// returns the URI of the resource_link that names it in the result (ok
// false: inline it as usual); Drop forgets a kept stream whose call
// failed. Both are called on the request's goroutine and must not wait.
type Keeper interface {
	Keep(s *flow.Session, resp *flow.Response, ref flow.StreamRef) (uri string, ok bool)
	Drop(uri string)
}

// original returns what an upstream bridge recorded in the _meta of a
// ref/stream block (mcpjson.OriginalKey): the block the ref replaced, without its
// payload, and the field where the payload goes ("text", "data",
// "resource.text", "resource.blob"); nil when it recorded none.
func original(ref flow.StreamRef) (block []byte, field string) {
	if !bytes.Contains(ref.Meta, []byte(mcpjson.OriginalKey)) {
		return nil, ""
	}
	ms, err := mcpjson.ReadObject(ref.Meta, func(n string) bool { return n == mcpjson.OriginalKey })
	o := mcpjson.Find(ms, mcpjson.OriginalKey)
	if err != nil || o == nil {
		return nil, ""
	}
	b := mcpjson.Find(o.Sub, "block")
	if field = mcpjson.String(o.Sub, "field"); b == nil || b.Value[0] != '{' || field == "" {
		return nil, ""
	}
	return b.Value, field
}

// inlineStream reads one execution stream and returns the block that
// replaces its ref.
func (b *Core) inlineStream(ctx context.Context, resp *flow.Response, ref flow.StreamRef) (*mcpjson.Splice, error) {
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
		uri, n, err := b.front.Offload(ctx, name, mime, io.MultiReader(bytes.NewReader(head), sr))
		if err != nil {
			return nil, fmt.Errorf("execution stream %d failed: %w", ref.StreamTag, err)
		}
		return mcpjson.NewSplice(linkBlock(uri, name, mime, n)), nil
	}
	if err := drain(sr); err != nil { // nothing left: see it end cleanly
		return nil, fmt.Errorf("execution stream %d failed: %w", ref.StreamTag, err)
	}
	if block, field := original(ref); block != nil {
		// An upstream bridge moved this block's payload: put it back.
		return mcpjson.Restore(block, field, head)
	}
	if IsText(mime) && utf8.Valid(head) {
		out := append(make([]byte, 0, len(head)+len(head)/8+32), `{"type":"text","text":`...)
		out, _ = jsontext.AppendQuote(out, head)
		return mcpjson.NewSplice(append(out, '}')), nil
	}
	out := append([]byte(`{"type":"resource","resource":{"uri":`), quote(fmt.Sprintf("mcp-flow://stream/%s/%d", resp.ID.Raw(), ref.StreamTag))...)
	if mime != "" {
		out = append(append(out, `,"mimeType":`...), quote(mime)...)
	}
	out = append(slices.Grow(out, base64.StdEncoding.EncodedLen(len(head))+4), `,"blob":"`...)
	out = base64.StdEncoding.AppendEncode(out, head)
	return mcpjson.NewSplice(append(out, `"}}`...)), nil
}

// linkBlock is a resource_link content block naming an offloaded stream
// (or a kept one: size -1, left out).
func linkBlock(uri, name, mime string, size int64) []byte {
	out := append([]byte(`{"type":"resource_link","uri":`), quote(uri)...)
	out = append(append(out, `,"name":`...), quote(name)...)
	if mime != "" {
		out = append(append(out, `,"mimeType":`...), quote(mime)...)
	}
	if size >= 0 {
		out = strconv.AppendInt(append(out, `,"size":`...), size, 10)
	}
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

// IsText reports whether a stream of this MIME type is inlined as text
// when its bytes are valid UTF-8 (spec §10).
func IsText(mime string) bool {
	return strings.HasPrefix(mime, "text/") || strings.HasPrefix(mime, "application/json")
}

// drain reads what is left of a stream (nothing, when the inline limit was
// not reached) so that it ends cleanly.
func drain(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}
