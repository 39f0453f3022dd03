package sdkflow_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"runtime"

	"github.com/mcp-flow/mcp-flow/bridge/sdkflow"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Raw streams (sdkflow.StreamResult, ClientTransport.KeepStreams,
// sdkflow.OpenStream; spec §10): a go-sdk tool's bytes on an execution
// stream as they are, read raw by a go-sdk client that asks for it,
// inline for every other client and over every other transport.

// rawFixture is a go-sdk server with the raw tools: raw (Bytes bytes of
// demotools.Generate, as MIME), failing (1 MiB, then an error) and held
// (64 KiB, then waits for its context, whose end it reports on ended).
type rawFixture struct{ ended chan error }

type rawArgs struct {
	Bytes int64
	MIME  string
	Text  string // written instead of Bytes when set
}

func newRawServer() (*rawFixture, *mcp.Server) {
	f := &rawFixture{ended: make(chan error, 4)}
	s := mcp.NewServer(&mcp.Implementation{Name: "raw-fixture", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "raw", Description: "N bytes, raw"},
		func(ctx context.Context, req *mcp.CallToolRequest, a rawArgs) (*mcp.CallToolResult, any, error) {
			res, err := sdkflow.StreamResult(ctx, req, a.MIME, func(_ context.Context, w io.Writer) error {
				src := demotools.Generate(a.Bytes)
				if a.Text != "" {
					src = strings.NewReader(a.Text)
				}
				_, err := io.Copy(w, src)
				return err
			})
			return res, nil, err
		})
	mcp.AddTool(s, &mcp.Tool{Name: "failing", Description: "1 MiB, then fails"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := sdkflow.StreamResult(ctx, req, "application/octet-stream", func(_ context.Context, w io.Writer) error {
				if _, err := io.Copy(w, demotools.Generate(1<<20)); err != nil {
					return err
				}
				return errors.New("the disk is on fire")
			})
			return res, nil, err
		})
	mcp.AddTool(s, &mcp.Tool{Name: "held", Description: "64 KiB, then waits to be cancelled"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := sdkflow.StreamResult(ctx, req, "application/octet-stream", func(ctx context.Context, w io.Writer) error {
				if _, err := io.Copy(w, demotools.Generate(64<<10)); err != nil {
					return err
				}
				<-ctx.Done()
				f.ended <- ctx.Err()
				return ctx.Err()
			})
			return res, nil, err
		})
	return f, s
}

// connectKeeping connects a go-sdk client whose transport keeps raw
// streams.
func connectKeeping(t *testing.T, ctx context.Context, srv *flow.Server, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-raw", Version: "1"}, nil).Connect(ctx,
		&sdkflow.ClientTransport{URL: srv.URL(), KeepStreams: true, Client: flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet}, Logger: flowtest.Quiet},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// keptLink returns the one resource_link a KeepStreams client got.
func keptLink(t *testing.T, r *mcp.CallToolResult, err error) *mcp.ResourceLink {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	link, ok := r.Content[0].(*mcp.ResourceLink)
	if len(r.Content) != 1 || !ok || !strings.HasPrefix(link.URI, sdkflow.KeptPrefix) {
		t.Fatalf("want one resource_link to a kept stream, got %d blocks, the first %T", len(r.Content), r.Content[0])
	}
	return link
}

func hexSHA(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// inlineBytes returns the bytes of a raw stream inlined into r: its text,
// or its embedded resource's blob.
func inlineBytes(t *testing.T, r *mcp.CallToolResult, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	switch c := r.Content[0].(type) {
	case *mcp.TextContent:
		return []byte(c.Text)
	case *mcp.EmbeddedResource:
		return c.Resource.Blob
	}
	t.Fatalf("want inline content, got %T", r.Content[0])
	return nil
}

// TestRawStream: a raw stream of 3 MiB crosses byte for byte (SHA-256) to a
// KeepStreams client, which reads it with OpenStream (once: a second open
// is ErrUnknownStream), in both MCP eras; a default client gets the same
// bytes inline (a base64 blob; text for a text type); the server sent each
// on one execution stream.
func TestRawStream(t *testing.T) {
	_, s := newRawServer()
	srv := serve(t, s)
	const n = 3 << 20
	want := demotools.GenerateSHA256(n)
	for _, version := range []string{protocol.MCP20260728, protocol.MCP20251125} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // the subtest takes about 0.3 s
			defer cancel()
			cs := connectKeeping(t, ctx, srv.flow, version)
			defer cs.Close()
			before := srv.streams.Load()
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "raw", Arguments: rawArgs{Bytes: n, MIME: "application/x-raw"}})
			link := keptLink(t, r, err)
			if link.MIMEType != "application/x-raw" || link.Name != "stream-1.bin" {
				t.Fatalf("link: %+v", link)
			}
			rd, err := sdkflow.OpenStream(ctx, link.URI)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rd)
			if err != nil || len(got) != n || hexSHA(got) != want {
				t.Fatalf("read %d of %d bytes (%v), sha256 %s, want %s", len(got), n, err, hexSHA(got), want)
			}
			_ = rd.Close()
			if _, err := sdkflow.OpenStream(ctx, link.URI); !errors.Is(err, sdkflow.ErrUnknownStream) {
				t.Fatalf("a second open: %v, want ErrUnknownStream", err)
			}
			srv.waitStreams(t, before, 1)

			// A default client: the same bytes, inline.
			_, plain := connect(t, ctx, srv.flow, version, nil)
			defer plain.Close()
			r, err = plain.CallTool(ctx, &mcp.CallToolParams{Name: "raw", Arguments: rawArgs{Bytes: n, MIME: "application/x-raw"}})
			if b := inlineBytes(t, r, err); hexSHA(b) != want {
				t.Fatalf("default client: %d bytes, sha256 %s", len(b), hexSHA(b))
			}
			text := strings.Repeat("große Bytes ", 1000)
			r, err = plain.CallTool(ctx, &mcp.CallToolParams{Name: "raw", Arguments: rawArgs{MIME: "text/plain; charset=utf-8", Text: text}})
			if got := inlineBytes(t, r, err); string(got) != text {
				t.Fatalf("default client, text: %d bytes, want %d", len(got), len(text))
			}
			if _, ok := r.Content[0].(*mcp.TextContent); !ok {
				t.Fatalf("default client, text: %T, want text content", r.Content[0])
			}
			srv.waitStreams(t, before, 3)
		})
	}
}

// TestRawStreamFallback: over the go-sdk's own in-memory transport, where
// there is no execution stream, the same tools answer inline: a base64
// blob, text for a text type, and a failing writer is the call's error.
func TestRawStreamFallback(t *testing.T) {
	_, s := newRawServer()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // the test takes about 0.1 s
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	const n = 1 << 20
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "raw", Arguments: rawArgs{Bytes: n, MIME: "application/x-raw"}})
	if b := inlineBytes(t, r, err); hexSHA(b) != demotools.GenerateSHA256(n) {
		t.Fatalf("inline: %d bytes, sha256 %s", len(b), hexSHA(b))
	}
	if e, ok := r.Content[0].(*mcp.EmbeddedResource); !ok || e.Resource.MIMEType != "application/x-raw" {
		t.Fatalf("inline: %T, want an embedded resource of application/x-raw", r.Content[0])
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "raw", Arguments: rawArgs{MIME: "application/json", Text: `{"ok":true}`}})
	if tc, ok := r.Content[0].(*mcp.TextContent); err != nil || !ok || tc.Text != `{"ok":true}` {
		t.Fatalf("inline JSON: %v %T, want text", err, r.Content[0])
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "failing", Arguments: map[string]any{}})
	if err != nil || !r.IsError || !strings.Contains(r.Content[0].(*mcp.TextContent).Text, "the disk is on fire") {
		t.Fatalf("a failing writer: %v %+v, want a tool error naming its cause", err, r)
	}
}

// TestRawStreamFailures: a writer that fails mid-stream reaches the reader
// as the *flow.StreamError naming its cause, never io.EOF (spec §5.4); a
// reader whose context ends while it waits for bytes gets the context's
// error, and its $/cancel ends the writer's context on the server (spec
// §7.1); a kept stream never opened goes with its connection; and every
// goroutine of both sides ends with them.
func TestRawStreamFailures(t *testing.T) {
	f, s := newRawServer()
	srv := serve(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // the test takes about 0.3 s
	defer cancel()
	before := flowtest.SettledGoroutines(0)
	cs := connectKeeping(t, ctx, srv.flow, protocol.MCP20251125)

	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "failing", Arguments: map[string]any{}})
	rd, err := sdkflow.OpenStream(ctx, keptLink(t, r, err).URI)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rd)
	var se *flow.StreamError
	if !errors.As(err, &se) || se.Code != jsonrpc.CodeInternalError || !strings.Contains(se.Reason, "the disk is on fire") {
		t.Fatalf("a failed stream: %d bytes, %v; want a *flow.StreamError -32603 naming the cause", len(got), err)
	}
	if _, err := rd.Read(make([]byte, 1)); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("a read after the failure: %v, want the failure again", err)
	}

	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "held", Arguments: map[string]any{}})
	rctx, rcancel := context.WithCancel(ctx)
	rd, err = sdkflow.OpenStream(rctx, keptLink(t, r, err).URI)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rd, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	// The next read waits for bytes the writer holds back until its
	// context ends: only the $/cancel ends both. (The read may also begin
	// after the cancel and return at once: then only the writer's context
	// ending shows the $/cancel, which the check below holds either way;
	// without the $/cancel it failed after its 10 s guard.)
	readErr := make(chan error, 1)
	go func() {
		_, err := rd.Read(make([]byte, 1))
		readErr <- err
	}()
	rcancel()
	select {
	case err := <-readErr:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled read: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled read still waited after 10 s")
	}
	select {
	case err := <-f.ended:
		if err == nil {
			t.Fatal("the writer's context ended without an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the writer's context had not ended 10 s after the reader's $/cancel")
	}
	_ = rd.Close()

	// A kept stream never opened: gone with the connection.
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "raw", Arguments: rawArgs{Bytes: 1 << 20}})
	unopened := keptLink(t, r, err).URI
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sdkflow.OpenStream(ctx, unopened); !errors.Is(err, sdkflow.ErrUnknownStream) {
		t.Fatalf("a kept stream after its connection closed: %v, want ErrUnknownStream", err)
	}
	if err := srv.sdk.Wait(ctx); err != nil {
		t.Fatalf("the go-sdk server session did not end: %v", err)
	}
	if n := flowtest.SettledGoroutines(before); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines left behind (%d before):\n%s", n-before, before, buf[:runtime.Stack(buf, true)])
	}
}
