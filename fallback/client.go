package fallback

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	neturl "net/url"
	"regexp"
	"strings"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// Call sends a request and waits for its answer, as flow.Session.Call does
// on either transport: a JSON-RPC error is a *jsonrpc.Error; progress, when
// onProgress is set, arrives in increasing order; ctx ending cancels the
// request ($/cancel on MCP-Flow, notifications/cancelled on Streamable
// HTTP) and returns ctx's error.
func (c *Client) Call(ctx context.Context, method string, params any, onProgress func(flow.Progress)) (*Response, error) {
	if c.sess != nil {
		var opts []flow.CallOption
		if onProgress != nil {
			opts = append(opts, flow.WithProgress(onProgress))
		}
		r, err := c.sess.Call(ctx, method, params, opts...)
		if err != nil {
			return nil, err
		}
		return &Response{ID: r.ID, Result: r.Result, Refs: r.Refs, fr: r, c: c}, nil
	}
	res, err := c.h.call(ctx, method, params, onProgress)
	if err != nil {
		return nil, err
	}
	return &Response{Result: res, c: c}, nil
}

// Cancel cancels a request whose result came but whose execution streams
// are still being read (MCP-Flow: $/cancel resets them, spec §7.1). Over
// Streamable HTTP there is nothing left to cancel once the answer came.
func (c *Client) Cancel(r *Response, reason string) {
	if c.sess != nil && r.fr != nil {
		_ = c.sess.Notify(protocol.MethodCancel, flow.CancelParams{RequestID: r.ID, Reason: reason})
	}
}

// InitializeResult is the server's answer to initialize.
func (c *Client) InitializeResult() *flow.InitializeResult {
	if c.sess != nil {
		return c.sess.InitializeResult()
	}
	return c.h.init
}

// Done is closed when the session ends.
func (c *Client) Done() <-chan struct{} {
	if c.sess != nil {
		return c.sess.Done()
	}
	return c.h.done
}

// Err is why the session ended, nil while it runs.
func (c *Client) Err() error {
	if c.sess != nil {
		return c.sess.Err()
	}
	return c.h.Err()
}

// Close ends the session: $/shutdown on MCP-Flow (spec §7.2), DELETE on
// Streamable HTTP.
func (c *Client) Close() error {
	if c.sess != nil {
		return c.sess.Close()
	}
	return c.h.Close()
}

// Response is the successful answer to Call.
type Response struct {
	ID     jsonrpc.ID // MCP-Flow only
	Result json.RawMessage
	// Refs lists the result's ref/stream blocks (MCP-Flow); none over
	// Streamable HTTP, where the server's front replaced them (spec §10).
	Refs []flow.StreamRef
	fr   *flow.Response
	c    *Client
}

// Close releases the execution streams that were not read (MCP-Flow).
func (r *Response) Close() error {
	if r.fr != nil {
		return r.fr.Close()
	}
	return nil
}

// Payload is the bytes of an execution stream, however they came.
type Payload struct {
	io.ReadCloser
	MimeType string
	// Tag is the stream's tag (MCP-Flow) or the one its link names.
	Tag uint32
	// Size is the payload's size where it is known before reading, else -1.
	Size int64
	// How says how it came: "stream", "inline" or "download".
	How string
}

// linkName is how the server's front names an offloaded stream's
// resource_link (bridge.linkName): stream-<tag> and an extension.
var linkName = regexp.MustCompile(`^stream-([0-9]+)(\.[A-Za-z0-9]+)?$`)

// Payload returns the execution stream a content block of the result
// carries, or nil when it carries none: a ref/stream (MCP-Flow: the stream
// itself, spec §5), or what the server's HTTP front made of one (spec
// §10): an embedded resource with an mcp-flow://stream/ URI and a base64
// blob, or a resource_link named stream-<tag>.<ext> to a download on the
// server's host (any port: a relay or load balancer may stand between),
// fetched with the session's HTTP client. A text stream small enough
// arrives as a text block and is not a Payload.
func (r *Response) Payload(ctx context.Context, block json.RawMessage) (*Payload, error) {
	var b struct {
		Type, URI, Name, MimeType string
		Size                      *int64
		Resource                  *struct{ URI, MimeType, Blob string }
	}
	if err := json.Unmarshal(block, &b); err != nil {
		return nil, nil
	}
	switch {
	case b.Type == protocol.ContentTypeRef && r.fr != nil:
		ref, ok := mcpjson.ParseRef(block)
		if !ok {
			return nil, nil
		}
		sr, err := r.fr.Stream(ctx, ref.StreamTag)
		if err != nil {
			return nil, err
		}
		return &Payload{ReadCloser: sr, MimeType: ref.MimeType, Tag: ref.StreamTag, Size: -1, How: "stream"}, nil
	case r.c.h == nil:
		return nil, nil
	case b.Type == "resource" && b.Resource != nil && len(b.Resource.URI) > len(streamURIPrefix) && b.Resource.URI[:len(streamURIPrefix)] == streamURIPrefix:
		data, err := base64.StdEncoding.DecodeString(b.Resource.Blob)
		if err != nil {
			return nil, fmt.Errorf("fallback: %s: blob: %w", b.Resource.URI, err)
		}
		var tag uint32
		fmt.Sscanf(b.Resource.URI[len(streamURIPrefix):], "%*[^/]/%d", &tag)
		return &Payload{ReadCloser: io.NopCloser(bytes.NewReader(data)), MimeType: b.Resource.MimeType, Tag: tag, Size: int64(len(data)), How: "inline"}, nil
	case b.Type == "resource_link":
		m := linkName.FindStringSubmatch(b.Name)
		if m == nil || !r.c.h.sameHost(b.URI) {
			return nil, nil
		}
		var tag uint32
		fmt.Sscan(m[1], &tag)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.URI, nil)
		if err != nil {
			return nil, err
		}
		resp, err := r.c.h.hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fallback: download %s: %w", b.Name, err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("fallback: download %s: HTTP %s", b.Name, resp.Status)
		}
		size := int64(-1)
		if b.Size != nil {
			size = *b.Size
		}
		return &Payload{ReadCloser: &sized{resp.Body, size}, MimeType: b.MimeType, Tag: tag, Size: size, How: "download"}, nil
	}
	return nil, nil
}

// streamURIPrefix is the URI prefix of the front's inline blobs.
const streamURIPrefix = "mcp-flow://stream/"

// sameHost reports whether uri is https on the session's host; on a
// loopback session every loopback name is the same machine (as the
// server's own Host check has it, spec §9).
func (h *httpSession) sameHost(uri string) bool {
	u, err := neturl.Parse(uri)
	if err != nil || u.Scheme != "https" {
		return false
	}
	s, err := neturl.Parse(h.url)
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Hostname(), s.Hostname()) || loopback(u.Hostname()) && loopback(s.Hostname())
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// sized fails a download that ends short of the size its link gave: a cut
// connection is not a shorter payload.
type sized struct {
	io.ReadCloser
	left int64 // -1: unknown
}

func (s *sized) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if s.left >= 0 {
		s.left -= int64(n)
		if err == io.EOF && s.left != 0 {
			return n, fmt.Errorf("fallback: download ended %d bytes short of its link's size: %w", s.left, io.ErrUnexpectedEOF)
		}
	}
	return n, err
}
