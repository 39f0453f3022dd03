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
	"time"

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
	id, res, err := c.h.call(ctx, method, params, onProgress)
	if err != nil {
		return nil, err
	}
	return &Response{ID: jsonrpc.Int64ID(id), Result: res, c: c}, nil
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

// Close ends the session: on MCP-Flow a graceful $/shutdown (spec §7.2)
// of at most CloseWait, then the close; on Streamable HTTP a DELETE of the
// session. Use Session().Shutdown for a drain of other bounds.
func (c *Client) Close() error {
	if c.sess != nil {
		ctx, cancel := context.WithTimeout(context.Background(), CloseWait)
		defer cancel()
		_ = c.sess.Shutdown(ctx, "client done")
		return c.sess.Close()
	}
	return c.h.Close()
}

// CloseWait bounds Close's drain: the server answers $/shutdown in a round
// trip when nothing is in flight.
const CloseWait = time.Second

// Response is the successful answer to Call.
type Response struct {
	ID     jsonrpc.ID
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

// carried is what a content block says of the stream it carries.
type carried struct {
	how      string // "stream", "inline", "download"; "" none
	mimeType string
	tag      uint32
	size     int64 // -1: unknown
	uri      string
	blob     string
}

// carries reads a content block: see Payload.
func (r *Response) carries(block json.RawMessage) carried {
	var b struct {
		Type, URI, Name, MimeType string
		Size                      *int64
		Resource                  *struct{ URI, MimeType, Blob string }
	}
	if err := json.Unmarshal(block, &b); err != nil {
		return carried{}
	}
	switch {
	case b.Type == protocol.ContentTypeRef && r.fr != nil:
		if ref, ok := mcpjson.ParseRef(block); ok {
			return carried{how: "stream", mimeType: ref.MimeType, tag: ref.StreamTag, size: -1}
		}
	case r.c.h == nil:
	case b.Type == "resource" && b.Resource != nil && strings.HasPrefix(b.Resource.URI, streamURIPrefix):
		var tag uint32
		fmt.Sscanf(b.Resource.URI[len(streamURIPrefix):], "%*[^/]/%d", &tag)
		return carried{how: "inline", mimeType: b.Resource.MimeType, tag: tag, size: int64(base64.StdEncoding.DecodedLen(len(b.Resource.Blob))), blob: b.Resource.Blob}
	case b.Type == "resource_link":
		m := linkName.FindStringSubmatch(b.Name)
		if m == nil || !r.c.h.sameHost(b.URI) {
			break
		}
		var tag uint32
		fmt.Sscan(m[1], &tag)
		size := int64(-1)
		if b.Size != nil {
			size = *b.Size
		}
		return carried{how: "download", mimeType: b.MimeType, tag: tag, size: size, uri: b.URI}
	}
	return carried{}
}

// Carries reports whether a content block of the result carries an
// execution stream (see Payload), and its tag and MIME type, without
// reading it.
func (r *Response) Carries(block json.RawMessage) (tag uint32, mimeType string, ok bool) {
	c := r.carries(block)
	return c.tag, c.mimeType, c.how != ""
}

// Payload returns the execution stream a content block of the result
// carries, or nil when it carries none: a ref/stream (MCP-Flow: the stream
// itself, spec §5), or what the server's HTTP front made of one (spec
// §10): an embedded resource with an mcp-flow://stream/ URI and a base64
// blob, or a resource_link named stream-<tag>.<ext> to a download on the
// server's host (any port: a relay or load balancer may stand between),
// fetched with the session's HTTP client. A text stream small enough
// arrives as a text block and is not a Payload.
func (r *Response) Payload(ctx context.Context, block json.RawMessage) (*Payload, error) {
	c := r.carries(block)
	p := &Payload{MimeType: c.mimeType, Tag: c.tag, Size: c.size, How: c.how}
	switch c.how {
	case "stream":
		sr, err := r.fr.Stream(ctx, c.tag)
		if err != nil {
			return nil, err
		}
		p.ReadCloser = sr
	case "inline":
		data, err := base64.StdEncoding.DecodeString(c.blob)
		if err != nil {
			return nil, fmt.Errorf("fallback: inline stream %d: blob: %w", c.tag, err)
		}
		p.ReadCloser, p.Size = io.NopCloser(bytes.NewReader(data)), int64(len(data))
	case "download":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.uri, nil)
		if err != nil {
			return nil, err
		}
		resp, err := r.c.h.hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fallback: download of stream %d: %w", c.tag, err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("fallback: download of stream %d: HTTP %s", c.tag, resp.Status)
		}
		p.ReadCloser = &sized{resp.Body, c.size}
	default:
		return nil, nil
	}
	return p, nil
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
