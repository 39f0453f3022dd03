package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/mcpjson"
)

// Raw streams of an in-process server (spec §10, package bridge/sdkflow's
// StreamResult): a result names each with a resource_link block whose URI
// its link knows (Link.Raw), and the bridge sends the stream's bytes as
// they are on an execution stream of their own, the block replaced by its
// ref/stream. Nothing of the payload is encoded on the way (no base64, no
// JSON string), and no original block is recorded: a front inlines such a
// stream as text or a base64 blob, or hands it on as it is.

// RawPrefix begins the URI of a resource_link block that stands for a raw
// stream of the link's.
const RawPrefix = "mcp-flow-raw:"

// rawLink is a link whose server registers raw streams (funcLink).
type rawLink interface {
	raw(uri string) (mime string, write RawWriter, ok bool)
}

// rawOut replaces each resource_link block of result whose URI link knows
// with the ref/stream block of an execution stream that the raw stream's
// writer fills on its own goroutine, under ctx, the request's. A stream that cannot be opened (the
// session's maxConcurrentStreams, -32000, spec §5.3) fails the call with
// that error, and the streams opened for it before are failed.
func rawOut(ctx context.Context, req *flow.Request, link rawLink, result json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(result, []byte(RawPrefix)) {
		return result, nil
	}
	type raw struct {
		start, end int
		w          *flow.StreamWriter
		write      RawWriter
	}
	var raws []raw
	fail := func(err error) {
		for _, r := range raws {
			r.w.Fail(err)
		}
	}
	err := mcpjson.ReadContent(result, func(string) bool { return false }, func(b mcpjson.Block) error {
		uri := mcpjson.String(b.Members, "uri")
		if mcpjson.String(b.Members, "type") != "resource_link" || !strings.HasPrefix(uri, RawPrefix) {
			return nil
		}
		mime, write, ok := link.raw(uri)
		if !ok {
			return nil
		}
		w, err := req.OpenStream(orDefault(mime, "application/octet-stream"))
		if err != nil {
			return err
		}
		raws = append(raws, raw{b.Start, b.End, w, write})
		return nil
	})
	if err != nil {
		fail(err)
		return nil, err
	}
	if len(raws) == 0 {
		return result, nil
	}
	out := mcpjson.NewSplice(result)
	for _, r := range raws {
		out.Replace(r.start, r.end, mcpjson.AppendRef(nil, r.w.Ref()))
		go writeRaw(ctx, r.w, r.write)
	}
	return out.Bytes(), nil
}

// writeRaw runs a raw stream's writer on w and ends the stream: cleanly
// when the writer returns nil, else failed with its error (spec §5.4). The
// writer's context is the request's (flow ends it at a $/cancel, which
// resets its streams, spec §7.1, and with the session; it lasts while a
// stream of the request is open) and ends too when a write fails (the
// client refused the stream).
func writeRaw(ctx context.Context, w *flow.StreamWriter, write RawWriter) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if err := write(ctx, &cancellingWriter{w, cancel}); err != nil {
		w.Fail(err)
		return
	}
	if ctx.Err() != nil { // a write failed and the writer did not say so
		w.Fail(context.Cause(ctx))
		return
	}
	_ = w.Close()
}

// cancellingWriter ends its writer's context with the first failed write.
type cancellingWriter struct {
	w      io.Writer
	cancel context.CancelCauseFunc
}

func (c *cancellingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.cancel(err)
	}
	return n, err
}
