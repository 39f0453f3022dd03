package sdkflow

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
	"github.com/mcp-flow/mcp-flow/bridge/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A go-sdk tool's result as raw bytes on an execution stream (spec §5,
// §10): StreamResult registers the stream with the handler's connection
// and returns a result whose one resource_link names it; the upstream's
// core (package bridge/internal/upstream, rawout.go) takes it from there
// (serverConn.takeRaw), opens the execution stream and replaces the link
// with its ref/stream block.

// served maps each go-sdk server session that Serve connected to its
// connection, while it lasts: StreamResult finds its handler's there.
var served sync.Map // *mcp.ServerSession → *serverConn

// rawSeq numbers the raw streams of the process.
var rawSeq atomic.Uint64

// rawStream is a stream StreamResult registered and the upstream has not
// yet taken.
type rawStream struct {
	mime  string
	write upstream.RawWriter
}

// StreamResult returns the result of a go-sdk tool whose content is one
// stream of bytes of MIME type mimeType, which write writes (spec §5, §10).
//
// When the tool's server runs over MCP-Flow (Serve), the bytes go as they
// are on an execution stream of their own, never base64 or a JSON string:
// write runs on a goroutine of its own once the handler has returned this
// result, and ctx there ends when the client cancels or refuses the stream
// or the session ends; an error from write fails the stream ($/streamError,
// spec §5.4), so that the client never takes a part for the whole. An
// MCP-Flow client reads the stream as any (Response.Stream); a go-sdk
// client over a ClientTransport with KeepStreams gets a resource_link that
// OpenStream reads; any other client of the bridges gets the bytes inline,
// as below.
//
// Over any other transport of the go-sdk (stdio, Streamable HTTP, in
// memory), where there is no execution stream, write runs at once with the
// handler's ctx into memory, and the result carries the bytes inline as a
// front of MCP-Flow inlines a stream (spec §10): text content for a text/*
// or JSON MIME type whose bytes are valid UTF-8, else an embedded resource
// with a base64 blob (URI "mcp-flow://stream/inline"). So a tool stays
// neutral to its transport; an error from write is the handler's error.
func StreamResult(ctx context.Context, req *mcp.CallToolRequest, mimeType string, write func(ctx context.Context, w io.Writer) error) (*mcp.CallToolResult, error) {
	if req != nil && req.Session != nil {
		if c, ok := served.Load(req.Session); ok {
			return c.(*serverConn).addRaw(mimeType, write), nil
		}
	}
	var buf bytes.Buffer
	if err := write(ctx, &buf); err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{inlineContent(mimeType, buf.Bytes())}}, nil
}

// inlineContent is a stream's bytes as MCP content, as a front inlines
// a stream no upstream bridge moved out of a block (spec §10).
func inlineContent(mime string, b []byte) mcp.Content {
	if core.IsText(mime) && utf8.Valid(b) {
		return &mcp.TextContent{Text: string(b)}
	}
	return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mcp-flow://stream/inline", MIMEType: mime, Blob: b}}
}

// addRaw registers a raw stream with c and returns the result that names
// it. A stream whose result never reaches the upstream (its request was
// cancelled first) goes with the connection.
func (c *serverConn) addRaw(mime string, write upstream.RawWriter) *mcp.CallToolResult {
	uri := upstream.RawPrefix + strconv.FormatUint(rawSeq.Add(1), 10)
	c.rawMu.Lock()
	if c.raws == nil {
		c.raws = map[string]rawStream{}
	}
	c.raws[uri] = rawStream{mime, write}
	c.rawMu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: uri, Name: "stream", MIMEType: mime}}}
}

// takeRaw is the connection's Link.Raw: the stream registered under uri,
// forgotten as it is taken.
func (c *serverConn) takeRaw(uri string) (string, upstream.RawWriter, bool) {
	c.rawMu.Lock()
	defer c.rawMu.Unlock()
	r, ok := c.raws[uri]
	delete(c.raws, uri)
	return r.mime, r.write, ok
}
