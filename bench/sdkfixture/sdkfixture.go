// Package sdkfixture is the baseline MCP server of the benchmarks, built with
// the official MCP Go SDK: the same echo and large-result tools as
// mcp-flow-server, so that stdio and Streamable HTTP can be measured against
// MCP-Flow. Large results travel as they must there: inline, base64.
package sdkfixture

import (
	"context"
	"io"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EchoArgs are echo's arguments.
type EchoArgs struct {
	Text string `json:"text"`
}

// BlobArgs are blob's arguments.
type BlobArgs struct {
	Bytes int64 `json:"bytes"`
}

// NewServer returns the go-sdk server with the tools echo and blob (N bytes
// of demotools.Generate as image content, inline base64; also as generate).
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk-fixture", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo text"},
		func(_ context.Context, _ *mcp.CallToolRequest, a EchoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	blob := func(_ context.Context, _ *mcp.CallToolRequest, a BlobArgs) (*mcp.CallToolResult, any, error) {
		b := make([]byte, a.Bytes)
		if _, err := io.ReadFull(demotools.Generate(a.Bytes), b); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: b, MIMEType: "application/octet-stream"}}}, nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "blob", Description: "N deterministic bytes, inline"}, blob)
	// generate: blob under the name of mcp-flow-server's large result, so
	// that `mcp-flow bench`'s default large-result Call fits every peer.
	mcp.AddTool(s, &mcp.Tool{Name: "generate", Description: "N deterministic bytes, inline (blob)"}, blob)
	return s
}
