package sdkflow

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The client side of raw streams (ClientTransport.KeepStreams): each raw
// execution stream of a result is named by a resource_link whose URI
// OpenStream reads, instead of coming inline (spec §10).

// KeptPrefix begins the URI of the resource_link that names a kept
// stream in a result.
const KeptPrefix = "mcp-flow://kept/"

// ErrUnknownStream is OpenStream's error for a URI that names no kept
// stream: never kept, opened already, or its connection closed.
var ErrUnknownStream = errors.New("sdkflow: the URI names no kept execution stream (opened already, or its connection closed)")

// kept holds the kept streams of every connection until they are opened.
var kept sync.Map // URI → *keptStream

var keptSeq atomic.Uint64

// keptStream is one raw execution stream a result named, not yet opened.
type keptStream struct {
	s    *flow.Session
	resp *flow.Response
	tag  uint32
	c    *clientConn
}

// OpenStream returns a reader of the raw bytes of the execution stream that
// a result names by uri, the URI of its resource_link block, for a go-sdk
// client whose ClientTransport has KeepStreams (spec §5, §10). A stream is
// opened once; ErrUnknownStream for a URI that names none (opened already,
// or its connection closed).
//
// The reader reads the stream as it arrives: memory stays bounded however
// long it is (QUIC flow control holds back what is not read). Read returns
// io.EOF only after the whole payload; a stream the server failed returns
// the *flow.StreamError that says why ($/streamError, spec §5.4), never
// io.EOF. When ctx ends before the stream does, the server is sent $/cancel
// for the stream's request (spec §7.1: it resets the stream and its writer
// stops) and Read returns ctx's error. Close gives up what is not read. Not
// safe for concurrent use.
func OpenStream(ctx context.Context, uri string) (io.ReadCloser, error) {
	v, ok := kept.LoadAndDelete(uri)
	if !ok {
		return nil, ErrUnknownStream
	}
	k := v.(*keptStream)
	k.c.forgetKept(uri)
	r := &keptReader{ctx: ctx}
	var once sync.Once
	r.cancel = func() {
		once.Do(func() {
			_ = k.s.Notify(protocol.MethodCancel, flow.CancelParams{RequestID: k.resp.ID, Reason: context.Cause(ctx).Error()})
		})
	}
	// $/cancel when ctx ends before the stream does.
	r.stop = context.AfterFunc(ctx, r.cancel)
	sr, err := k.resp.Stream(ctx, k.tag)
	if err != nil {
		r.stopCancel()
		_ = k.resp.Close() // what did not arrive is refused
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	r.sr = sr
	return r, nil
}

// keptReader is OpenStream's reader.
type keptReader struct {
	ctx    context.Context
	sr     *flow.StreamReader
	stop   func() bool // stops the $/cancel at ctx's end
	cancel func()      // sends the $/cancel, once
	err    error
}

// stopCancel stops the $/cancel at ctx's end; if ctx has ended all the
// same, it sends it. A context closes its Done before it runs its
// AfterFuncs, so a reader that saw ctx end can still stop the AfterFunc
// before it ran: the $/cancel would never leave and the server's writer
// would wait on (spec §7.1).
func (r *keptReader) stopCancel() {
	if r.stop() && r.ctx.Err() != nil {
		r.cancel()
	}
}

func (r *keptReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if err := r.ctx.Err(); err != nil {
		r.end(err)
		return 0, err
	}
	n, err := r.sr.Read(p)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		r.stop()
		r.err = io.EOF
	case r.ctx.Err() != nil: // the reset our $/cancel asked for
		err = r.ctx.Err()
		r.end(err)
	default:
		r.end(err)
	}
	return n, err
}

// end settles the reader with err and releases the stream.
func (r *keptReader) end(err error) {
	r.stopCancel()
	r.err = err
	_ = r.sr.Close()
}

// Close gives up what is left of the stream (it is refused).
func (r *keptReader) Close() error {
	if r.err == nil {
		r.end(errors.New("sdkflow: read on a closed stream"))
	}
	return nil
}

// clientFront as a core.Keeper (KeepStreams): raw streams are kept in
// kept for OpenStream, and forgotten with the connection.

func (f clientFront) Keep(s *flow.Session, resp *flow.Response, ref flow.StreamRef) (string, bool) {
	if !f.keep {
		return "", false
	}
	uri := KeptPrefix + strconv.FormatUint(keptSeq.Add(1), 10)
	c := f.c
	c.keptMu.Lock()
	defer c.keptMu.Unlock()
	if c.keptClosed {
		return "", false
	}
	if c.kept == nil {
		c.kept = map[string]struct{}{}
	}
	c.kept[uri] = struct{}{}
	kept.Store(uri, &keptStream{s: s, resp: resp, tag: ref.StreamTag, c: c})
	return uri, true
}

func (f clientFront) Drop(uri string) {
	kept.Delete(uri)
	f.c.forgetKept(uri)
}

func (c *clientConn) forgetKept(uri string) {
	c.keptMu.Lock()
	delete(c.kept, uri)
	c.keptMu.Unlock()
}

// dropKept refuses and forgets the connection's kept streams that were
// never opened, before its session shuts down (which would otherwise wait
// for them, spec §7.2).
func (c *clientConn) dropKept() {
	c.keptMu.Lock()
	uris := c.kept
	c.kept, c.keptClosed = nil, true
	c.keptMu.Unlock()
	for uri := range uris {
		if v, ok := kept.LoadAndDelete(uri); ok {
			_ = v.(*keptStream).resp.Close()
		}
	}
}
