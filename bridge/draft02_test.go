package bridge_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/draft02/draft02test"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// The fronts and a WebTransport draft-02 server (issue 28, item 6; spec
// §10, "Reaching the server"): interop/draft02peer, a v0.1-like peer on
// webtransport-go v0.6, which a current client's CONNECT cannot reach.

// draft02Bytes are the n bytes the peer's generate tool streams.
func draft02Bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

// TestStdioFrontDraft02: the stdio front, with the default WebTransport
// choice (auto), reaches the draft-02 peer (it dials again in draft-02 on
// the refusal, and says so once), and a tools/call comes back with the
// execution stream inline.
func TestStdioFrontDraft02(t *testing.T) {
	t.Parallel()
	p := draft02test.Start(t)
	records := make(chan map[string]string, 256)
	b := bridge.NewStdio(bridge.StdioConfig{URL: p.URL, Client: flow.ClientConfig{TLSConfig: p.TLS, Logger: flowtest.Quiet},
		Logger: slog.New(recordHandler{ch: records})})
	h := runLineHost(t, b, func() string { return "" })
	h.initialize()
	line := h.ok("1", "tools/call", `{"name":"generate","arguments":{"bytes":1000}}`, 30*time.Second)
	var m struct {
		Result mcp.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil || len(m.Result.Content) != 1 {
		t.Fatalf("tools/call generate: %s (%v)", line, err)
	}
	blob := m.Result.Content[0].(*mcp.EmbeddedResource).Resource.Blob
	if string(blob) != string(draft02Bytes(1000)) {
		t.Fatalf("generate: %d bytes, not the peer's 1000", len(blob))
	}
	r := awaitRecord(t, records, "the MCP-Flow server speaks WebTransport draft-02; dialling again in that dialect", time.Second)
	if !strings.Contains(r["refusal"], "stream reset partial delivery") {
		t.Fatalf("the fallback to draft-02 was logged as %v", r)
	}
}

// TestHTTPFrontDraft02: the HTTP front, with the default WebTransport
// choice, reaches the draft-02 peer: a go-sdk client initializes and calls
// generate through it. The peer answers MCP 2024-11-05 whatever it is
// asked, so the client is one of that version's HTTP+SSE transport, which
// the front serves on the same URL (a Streamable HTTP client would then
// send MCP-Protocol-Version 2024-11-05, which that transport has not).
func TestHTTPFrontDraft02(t *testing.T) {
	t.Parallel()
	p := draft02test.Start(t)
	h := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: p.URL,
		Client: flow.ClientConfig{TLSConfig: p.TLS, Logger: flowtest.Quiet}, Logger: flowtest.Quiet}})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { ts.CloseClientConnections(); h.Close(); ts.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "http-host", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.SSEClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatalf("connect through the HTTP front to the draft-02 peer: %v", err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo.Name; got != "draft02peer" {
		t.Fatalf("serverInfo %q", got)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "generate", Arguments: map[string]any{"bytes": 70000}})
	if err != nil {
		t.Fatal(err)
	}
	blob := r.Content[0].(*mcp.EmbeddedResource).Resource.Blob
	if string(blob) != string(draft02Bytes(70000)) {
		t.Fatalf("generate: %d bytes (%.40s…), not the peer's 70000", len(blob), base64.StdEncoding.EncodeToString(blob))
	}
}
