package flow_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// A stream that fails fails its content at once (issue 23): a stream reset
// before its header reached the client can be matched to nothing but its
// $/streamError, and the reader waited for it the whole StreamWait (10 s),
// then reported -32001 as if no stream had been sent.

// streamFailure is how long a failed stream may take to be reported: far
// under StreamWait, which the tests set to a minute so that a wait for it
// cannot pass (the tests give up waiting after twice streamFailure).
const (
	streamFailure = 5 * time.Second
	longWait      = time.Minute
)

// expectStreamFailure calls Stream for tag and wants a *StreamError for
// request id and tag with reason, at once (before streamFailure), or the
// same error from the first Read when the stream did arrive.
func expectStreamFailure(t *testing.T, r *flow.Response, tag uint32, reason string) {
	t.Helper()
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*streamFailure)
	defer cancel()
	sr, err := r.Stream(ctx, tag)
	if err == nil {
		var n int64
		n, err = io.Copy(io.Discard, sr)
		if n != 0 {
			t.Fatalf("read %d bytes of a stream that failed before any", n)
		}
	}
	took := time.Since(t0)
	var se *flow.StreamError
	id, _ := r.ID.Uint32()
	if !errors.As(err, &se) || se.RequestID != id || se.StreamTag != tag || se.Code != jsonrpc.CodeInternalError || se.Reason != reason {
		t.Fatalf("after %v: %v (%T), want a *StreamError for request %d tag %d, -32603, reason %q", took, err, err, id, tag, reason)
	}
	if msg := err.Error(); !strings.Contains(msg, "request "+r.ID.String()) || !strings.Contains(msg, "stream 1") {
		t.Fatalf("%q does not name the request and the tag", msg)
	}
	if took > streamFailure {
		t.Fatalf("the failure took %v to report, want it at once", took)
	}
}

// TestStreamResetBeforeHeader: the server opens a stream and fails it at
// once, so the reset usually overtakes the header and the client never
// learns which request the stream was for; the $/streamError (here before
// the result) fails the content at once. Ten rounds, as the order of stream,
// reset, $/streamError and result varies.
func TestStreamResetBeforeHeader(t *testing.T) {
	srv := customServer(t, flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		if req.Method != "fail" {
			return map[string]any{}, nil
		}
		w, err := req.OpenStream("application/octet-stream")
		if err != nil {
			return nil, err
		}
		w.Fail(errors.New("disk gone"))
		return map[string]any{"content": []any{w.Ref()}}, nil
	}), nil)
	s := dial(t, srv, func(c *flow.ClientConfig) { c.Limits.StreamWait = longWait })
	for range 10 {
		r, err := s.Call(context.Background(), "fail", nil)
		if err != nil {
			t.Fatal(err)
		}
		expectStreamFailure(t, r, 1, "disk gone")
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStreamErrorAfterResult: the result names a stream that never comes,
// and its $/streamError follows the result while the client waits for the
// stream: the wait ends at once with the failure.
func TestStreamErrorAfterResult(t *testing.T) {
	release := make(chan struct{})
	srv := customServer(t, flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		if req.Method != "fail" {
			return map[string]any{}, nil
		}
		id, _ := req.ID.Uint32()
		s := req.Session
		go func() {
			<-release
			_ = s.Notify(protocol.MethodStreamError, flow.StreamErrorParams{RequestID: id, StreamTag: 1, Error: "upstream gone"})
		}()
		return map[string]any{"content": []any{flow.StreamRef{Type: protocol.ContentTypeRef, StreamTag: 1, MimeType: "text/plain"}}}, nil
	}), nil)
	s := dial(t, srv, func(c *flow.ClientConfig) { c.Limits.StreamWait = longWait })
	r, err := s.Call(context.Background(), "fail", nil)
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	expectStreamFailure(t, r, 1, "upstream gone")
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStreamErrorWithoutReset: the server writes part of a stream, and once
// the client has read it sends its $/streamError and leaves the stream
// open, as a peer that cannot reset its streams does (Deno 2.9's
// WebTransport server, js/src/server.js): the reader fails at once with the
// reason instead of waiting for a reset that never comes.
func TestStreamErrorWithoutReset(t *testing.T) {
	release, read := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := customServer(t, flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		if req.Method != "fail" {
			return map[string]any{}, nil
		}
		w, err := req.OpenStream("application/octet-stream")
		if err != nil {
			return nil, err
		}
		id, _ := req.ID.Uint32()
		s := req.Session
		go func() {
			if _, err := w.Write(make([]byte, 1000)); err != nil {
				return
			}
			<-read
			_ = s.Notify(protocol.MethodStreamError, flow.StreamErrorParams{RequestID: id, StreamTag: 1, Error: "writer gone"})
			<-release // the stream stays open, neither finished nor reset
			w.Close()
		}()
		return map[string]any{"content": []any{w.Ref()}}, nil
	}), nil)
	s := dial(t, srv, func(c *flow.ClientConfig) { c.Limits.StreamWait = longWait })
	r, err := s.Call(context.Background(), "fail", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*streamFailure)
	defer cancel()
	sr, err := r.Stream(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(sr, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	close(read)
	t0 := time.Now()
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, sr); done <- err }()
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatalf("the read of a stream whose $/streamError came did not end within %v", 2*streamFailure)
	}
	var se *flow.StreamError
	if !errors.As(err, &se) || se.StreamTag != 1 || se.Code != jsonrpc.CodeInternalError || se.Reason != "writer gone" {
		t.Fatalf("after %v: %v (%T), want a *StreamError for tag 1, -32603, reason %q", time.Since(t0), err, err, "writer gone")
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}
