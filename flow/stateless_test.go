package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/faults"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// TestHelloStateless: a 2026-07-28 client settles the transport with $/hello
// (spec §11.3) and then does tools/call generate with an execution stream,
// gets resultType "complete", progress datagrams, and cancels (§11.5), in
// each encoding.
func TestHelloStateless(t *testing.T) {
	for _, enc := range []codec.Name{codec.JSON, codec.CBOR} {
		t.Run(string(enc), func(t *testing.T) {
			srv := startServer(t, nil)
			s := dial(t, srv, func(c *flow.ClientConfig) {
				c.ProtocolVersion = protocol.MCP20260728
				c.Encodings = []codec.Name{enc}
			})
			if !flow.HelloUsed(s) {
				t.Fatal("$/hello was not used")
			}
			if s.Encoding() != enc {
				t.Fatalf("encoding after $/hello = %s, want %s", s.Encoding(), enc)
			}
			if !flow.DatagramsOn(s) {
				t.Fatal("datagrams not enabled after $/hello")
			}
			const size = 1 << 20
			r := callTool(t, s, "generate", map[string]any{"bytes": size})
			var res struct{ ResultType string }
			if err := json.Unmarshal(r.Result, &res); err != nil || res.ResultType != "complete" {
				t.Fatalf("result %s: resultType = %q (%v), want complete", r.Result, res.ResultType, err)
			}
			if len(r.Refs) != 1 {
				t.Fatalf("refs = %+v", r.Refs)
			}
			sr, err := r.Stream(context.Background(), r.Refs[0].StreamTag)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, sr)
			if err != nil || n != size {
				t.Fatalf("stream: %d bytes, %v; want %d", n, err, size)
			}
			statelessCancel(t, s)
		})
	}
}

// statelessCancel runs slow with progress and cancels after the third
// update: the call ends with context.Canceled.
func statelessCancel(t *testing.T, s *flow.Session) {
	t.Helper()
	var progress atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 1000, "delayMs": 10}},
			flow.WithProgress(func(flow.Progress) {
				if progress.Add(1) == 3 {
					cancel()
				}
			}))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Call = %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("cancel did not end the call")
	}
	if progress.Load() < 3 {
		t.Fatalf("%d progress updates before the cancel, want ≥ 3", progress.Load())
	}
}

// TestHelloThenInitialize: a 2025 client with Hello settles CBOR with
// $/hello, then initializes without a transport member (spec §11.4), and
// initialize's result repeats the hello's transport (CBOR, version 0.2),
// on the wire as the client read it and in the server's record.
func TestHelloThenInitialize(t *testing.T) {
	srv := startServer(t, nil)
	s := dial(t, srv, func(c *flow.ClientConfig) {
		c.Hello = true
		c.Encodings = []codec.Name{codec.CBOR}
	})
	if s.Encoding() != codec.CBOR || !flow.HelloUsed(s) {
		t.Fatalf("encoding = %s, $/hello used = %v; want cbor by $/hello", s.Encoding(), flow.HelloUsed(s))
	}
	if tr := s.InitializeResult().Transport; tr.Encoding != codec.CBOR || tr.Version != protocol.VersionHello {
		t.Fatalf("initialize's result names transport %+v; want the hello's (cbor, %s)", tr, protocol.VersionHello)
	}
	r := callTool(t, s, "echo", map[string]any{"text": "hi"})
	if got := textOf(t, r); got != "hi" {
		t.Fatalf("echo = %q", got)
	}
	if strings.Contains(string(r.Result), "resultType") {
		t.Fatalf("a 2025 result carries resultType: %s", r.Result)
	}
	statelessCancel(t, s)
}

// TestStatelessWithoutHello: 2026-07-28 requests as the first frames, in
// JSON, with no $/hello (spec §11.4 row 3): server/discover, a version the
// server does not speak (-32022 with its data), and a tools/call.
func TestStatelessWithoutHello(t *testing.T) {
	srv := startServer(t, nil)
	p, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.write(frame(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	var disc struct {
		Result struct {
			SupportedVersions []string
			Capabilities      map[string]json.RawMessage
			ResultType        string
			Meta              map[string]flow.Implementation `json:"_meta"`
		}
	}
	b := p.read()
	if err := json.Unmarshal(b, &disc); err != nil {
		t.Fatal(err)
	}
	d := disc.Result
	if len(d.SupportedVersions) != 1 || d.SupportedVersions[0] != "2026-07-28" || d.ResultType != "complete" ||
		d.Capabilities["tools"] == nil || d.Meta[protocol.MetaServerInfo].Name != "test-server" {
		t.Fatalf("server/discover: %s", b)
	}
	p.write(frame(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}`))
	b = p.read()
	var e struct {
		ID    int
		Error struct {
			Code int
			Data struct {
				Supported []string
				Requested string
			}
		}
	}
	if err := json.Unmarshal(b, &e); err != nil || e.ID != 2 || e.Error.Code != protocol.CodeUnsupportedProtocolVersion ||
		len(e.Error.Data.Supported) != 1 || e.Error.Data.Supported[0] != "2026-07-28" || e.Error.Data.Requested != "2099-01-01" {
		t.Fatalf("unsupported version: %s", b)
	}
	// No request without the version passes in a stateless session.
	p.write(frame(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	expectError(t, p.read(), `3`, protocol.CodeUnsupportedProtocolVersion)
	p.write(frame(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	b = p.read()
	if !strings.Contains(string(b), `"resultType":"complete"`) || !strings.Contains(string(b), `"id":4`) {
		t.Fatalf("tools/call: %s", b)
	}
}

// TestHelloErrors: $/hello with another transport type is -32600 and a
// second $/hello is -32600 (spec §11.3, §11.4).
func TestHelloErrors(t *testing.T) {
	srv := startServer(t, nil)
	p, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.write(frame(`{"jsonrpc":"2.0","id":1,"method":"$/hello","params":{"transport":{"type":"other","version":"0.2","encodings":["json"]}}}`))
	expectError(t, p.read(), `1`, jsonrpc.CodeInvalidRequest)

	q, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	q.write(frame(`{"jsonrpc":"2.0","id":1,"method":"$/hello","params":{"transport":{"type":"mcp-flow","version":"0.2","encodings":["json"]}}}`))
	if b := q.read(); !strings.Contains(string(b), `"encoding":"json"`) {
		t.Fatalf("$/hello: %s", b)
	}
	q.write(frame(`{"jsonrpc":"2.0","id":2,"method":"$/hello","params":{"transport":{"type":"mcp-flow","version":"0.2","encodings":["json"]}}}`))
	expectError(t, q.read(), `2`, jsonrpc.CodeInvalidRequest)
	q.write(frame(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"},"transport":{"type":"mcp-flow","version":"0.1","encodings":["cbor"]}}}`))
	expectError(t, q.read(), `3`, jsonrpc.CodeInvalidRequest)
}

// TestStatelessOnBridges: a server with OnInitialize (a bridge) keeps the
// guide's lifecycle for 2026 requests unless it sets ServeStateless; then
// its Handler gets them, server/discover included (its upstream knows what
// to answer), and the session is stateless (spec §11.5, §11.6).
func TestStatelessOnBridges(t *testing.T) {
	const discover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	for _, serve := range []bool{false, true} {
		t.Run(fmt.Sprintf("ServeStateless=%v", serve), func(t *testing.T) {
			srv := startServer(t, func(c *flow.ServerConfig) {
				c.OnInitialize = func(context.Context, *flow.Session, json.RawMessage) (*flow.InitializeResult, error) {
					return &flow.InitializeResult{ProtocolVersion: protocol.MCPLatest, Capabilities: json.RawMessage("{}")}, nil
				}
				c.ServeStateless = serve
				c.Handler = flow.HandlerFunc(func(_ context.Context, r *flow.Request) (any, error) {
					return map[string]string{"answeredBy": "handler", "method": r.Method}, nil
				})
			})
			p, _, err := dialRaw(t, srv, nil)
			if err != nil {
				t.Fatal(err)
			}
			p.write(frame(discover))
			if !serve {
				expectError(t, p.read(), `1`, jsonrpc.CodeInvalidRequest)
				return
			}
			var r struct {
				Result struct{ AnsweredBy, Method, ResultType string }
			}
			if b := p.read(); json.Unmarshal(b, &r) != nil || r.Result.AnsweredBy != "handler" || r.Result.Method != "server/discover" || r.Result.ResultType != "complete" {
				t.Fatalf("server/discover on a bridge with ServeStateless: %s, want the handler's answer with resultType complete", b)
			}
			p.write(frame(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`))
			expectError(t, p.read(), `2`, protocol.CodeUnsupportedProtocolVersion)
		})
	}
}

// TestHelloFallback: against a guide-only server, a 2025 client with Hello
// falls back to the guide's initialize (and still gets CBOR); a 2026-07-28
// client's Dial fails saying why (spec §11.4).
func TestHelloFallback(t *testing.T) {
	srv := startServer(t, func(c *flow.ServerConfig) { faults.Set(c, faults.Faults{GuideOnly: true}) })
	s := dial(t, srv, func(c *flow.ClientConfig) {
		c.Hello = true
		c.Encodings = []codec.Name{codec.CBOR}
	})
	if flow.HelloUsed(s) || s.Encoding() != codec.CBOR {
		t.Fatalf("$/hello used = %v, encoding %s; want the initialize fallback to cbor", flow.HelloUsed(s), s.Encoding())
	}
	if got := textOf(t, callTool(t, s, "echo", map[string]any{"text": "hi"})); got != "hi" {
		t.Fatalf("echo = %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t), ProtocolVersion: protocol.MCP20260728})
	if err == nil || !strings.Contains(err.Error(), "does not speak MCP 2026-07-28") {
		t.Fatalf("2026 Dial to a guide-only server: %v", err)
	}
	p, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.write(frame(`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`))
	expectError(t, p.read(), `1`, jsonrpc.CodeInvalidRequest)
}
