package upstream_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/mcp-flow/mcp-flow/bridge/internal/upstream"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/gobuild"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstreamServer serves the go-sdk fixture (a stdio MCP server) over
// MCP-Flow.
func upstreamServer(t *testing.T) *flow.Server {
	t.Helper()
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	upstream.NewStdioUpstream(upstream.StdioUpstreamConfig{Command: []string{buildFixture(t)}, Logger: flowtest.Quiet}).Configure(&cfg)
	return flowtest.Serve(t, cfg)
}

// buildFixture builds the go-sdk fixture's command (sdk-fixture, a stdio
// MCP server) and returns its path.
// It is built once for this test binary (gobuild; TestMain removes it).
func buildFixture(t *testing.T) string {
	t.Helper()
	fixture, err := gobuild.Build("github.com/mcp-flow/mcp-flow/bench/sdkfixture/cmd/sdk-fixture")
	if err != nil {
		t.Fatal(err)
	}
	return fixture
}

// TestUpstreamOverMCPFlow: an MCP-Flow client uses a stdio go-sdk server;
// its 1 MiB inline image leaves the control stream on an execution stream.
func TestUpstreamOverMCPFlow(t *testing.T) {
	srv := upstreamServer(t)
	ctx, s := flowtest.Dial(t, srv)
	if got := s.InitializeResult().ServerInfo.Name; got != "sdk-fixture" {
		t.Fatalf("serverInfo %q: initialize did not reach the upstream", got)
	}
	r, err := s.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": "上流"}})
	if err != nil || len(r.Refs) != 0 {
		t.Fatalf("echo: %v %s", err, r.Result)
	}
	r = fetchBlob(t, ctx, s, 1<<20)
	var res struct {
		Content []map[string]json.RawMessage
	}
	json.Unmarshal(r.Result, &res)
	if _, ok := res.Content[0]["_meta"]; !ok {
		t.Fatalf("the ref does not carry the original block: %s", r.Result)
	}
}

// TestHTTPUpstream: an MCP-Flow client uses a go-sdk server through the HTTP
// upstream, over Streamable HTTP and, through the backwards-compatible
// fallback, over the 2024-11-05 HTTP+SSE transport (the go-sdk's
// SSEHandler).
func TestHTTPUpstream(t *testing.T) {
	sdk := sdkfixture.NewServer()
	get := func(*http.Request) *mcp.Server { return sdk }
	for name, h := range map[string]http.Handler{
		"streamable": mcp.NewStreamableHTTPHandler(get, nil),
		"http+sse":   mcp.NewSSEHandler(get, nil),
	} {
		t.Run(name, func(t *testing.T) {
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			cfg := flow.ServerConfig{Logger: flowtest.Quiet}
			upstream.NewHTTPUpstream(upstream.HTTPUpstreamConfig{Endpoint: ts.URL, Logger: flowtest.Quiet}).Configure(&cfg)
			srv := flowtest.Serve(t, cfg)
			ctx, s := flowtest.Dial(t, srv)
			if got := s.InitializeResult().ServerInfo.Name; got != "sdk-fixture" {
				t.Fatalf("serverInfo %q", got)
			}
			fetchBlob(t, ctx, s, 1<<20)
			if _, err := s.Call(ctx, "tools/call", map[string]any{"name": "no-such-tool"}); err == nil {
				t.Fatal("an unknown tool answered")
			}
		})
	}
}

// fetchBlob calls the fixture's blob tool and checks that its n bytes come
// on one execution stream, byte for byte.
func fetchBlob(t *testing.T, ctx context.Context, s *flow.Session, n int64) *flow.Response {
	t.Helper()
	r, err := s.Call(ctx, "tools/call", map[string]any{"name": "blob", "arguments": map[string]int64{"bytes": n}})
	if err != nil || len(r.Refs) != 1 {
		t.Fatalf("blob: %v", err)
	}
	sr, err := r.Stream(ctx, r.Refs[0].StreamTag)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(sr)
	sum := sha256.Sum256(b)
	if err != nil || int64(len(b)) != n || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(n) {
		t.Fatalf("stream: %d of %d bytes, %v", len(b), n, err)
	}
	return r
}

// TestHTTPUpstreamNeither: a server that speaks neither Streamable HTTP nor
// HTTP+SSE fails initialize with an error that names both answers.
func TestHTTPUpstreamNeither(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nothing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(nothing.Close)
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	upstream.NewHTTPUpstream(upstream.HTTPUpstreamConfig{Endpoint: nothing.URL, Logger: flowtest.Quiet}).Configure(&cfg)
	srv := flowtest.Serve(t, cfg)
	_, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet})
	if err == nil || !strings.Contains(err.Error(), "neither Streamable HTTP") {
		t.Fatalf("initialize against a server of neither transport: %v", err)
	}
}

// scriptedPipe is an in-process stdio MCP server that answers initialize and
// then each tools/call with the next of results, as written; at a result
// of "" it dies (its output ends; its input is read to its end).
func scriptedPipe(results ...string) func(context.Context) (io.WriteCloser, io.Reader, func(), error) {
	return func(ctx context.Context) (io.WriteCloser, io.Reader, func(), error) {
		next := 0 // per session
		return flowtest.PipeServer(func(m flowtest.PipeMessage) (string, bool) {
			switch {
			case m.Method == "initialize":
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}}`, m.ID), false
			case m.Method == "tools/call" && next < len(results) && results[next] == "":
				return "", true
			case m.Method == "tools/call" && next < len(results):
				next++
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, results[next-1]), false
			}
			return "", false
		})(ctx)
	}
}

// TestUpstreamKeepsMemberOrder: the upstream passes a result on as its
// text, and when it moves a payload to an execution stream it splices the
// text: every other member keeps its place and bytes, and the original
// block rides along with its payload as a null in its place (spec §10).
func TestUpstreamKeepsMemberOrder(t *testing.T) {
	big := strings.Repeat("z", 300<<10)
	small := `{ "zeta":1, "content":[{"type":"text", "text":"short","annotations":{"priority":0.5}}], "alpha":{"b":2,"a":1} }`
	large := `{"zeta":1,"content":[{"type":"text","_meta":{"b":1,"a":2},"text":"` + big + `","annotations":{"priority":0.5}},{"type":"text","text":"kept","y":0}],"isError":false,"alpha":[]}`
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	upstream.NewPipeUpstream(scriptedPipe(small, large), 0, flowtest.Quiet).Configure(&cfg)
	srv := flowtest.Serve(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet, Encodings: []codec.Name{codec.JSON}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Call(ctx, "tools/call", map[string]any{"name": "small"})
	if err != nil || string(r.Result) != small {
		t.Fatalf("small result:\n got %s (%v)\nwant %s", r.Result, err, small)
	}
	r, err = s.Call(ctx, "tools/call", map[string]any{"name": "large"})
	if err != nil || len(r.Refs) != 1 {
		t.Fatalf("large result: %v, %d refs", err, len(r.Refs))
	}
	want := fmt.Sprintf(`{"zeta":1,"content":[{"type":"ref/stream","streamTag":%d,"mimeType":"text/plain; charset=utf-8","_meta":{"io.mcp-flow/original":{"block":{"type":"text","_meta":{"b":1,"a":2},"text":null,"annotations":{"priority":0.5}},"field":"text"}}},{"type":"text","text":"kept","y":0}],"isError":false,"alpha":[]}`, r.Refs[0].StreamTag)
	if string(r.Result) != want {
		t.Fatalf("large result:\n got %s\nwant %s", r.Result, want)
	}
	sr, err := r.Stream(ctx, r.Refs[0].StreamTag)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(sr); err != nil || string(b) != big {
		t.Fatalf("stream: %d bytes, %v", len(b), err)
	}
}
