// Package sdkfixture is the baseline MCP server of the benchmarks, built with
// the official MCP Go SDK: the same echo and large-result tools as
// mcp-flow-server, so that stdio and Streamable HTTP can be measured against
// MCP-Flow. Large results travel as they must there: inline, base64.
package sdkfixture

import (
	"context"
	"fmt"
	"io"
	"time"

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

// TouchedURI is the fixture's one resource, which the tool touch updates.
const TouchedURI = "sdk-fixture://touched"

// NewServer returns the go-sdk server with the tools echo and blob (N bytes
// of demotools.Generate as image content, inline base64; also as generate),
// and touch, which updates the resource TouchedURI for its subscribers.
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk-fixture", Version: "1"}, &mcp.ServerOptions{
		// Clients may subscribe to TouchedURI (the server keeps the
		// subscriptions): touch updates it.
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddResource(&mcp.Resource{URI: TouchedURI, Name: "touched", MIMEType: "text/plain"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: TouchedURI, MIMEType: "text/plain", Text: "touched"}}}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "notifications/resources/updated of " + TouchedURI + " to its subscribers"},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil, s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: TouchedURI})
		})
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

// AddToolsUntil adds the tools added0, added1, ... to s, one every
// interval, until got delivers a value, which it returns with true; after
// guard (a hang guard) it returns false and the number added. For tests of
// list changes whose listener opens on its own time (a GET stream, a
// subscription a bridge opens upstream): nothing outside says when a change
// would reach it, so one is made until one does.
func AddToolsUntil[T any](s *mcp.Server, interval, guard time.Duration, got <-chan T) (v T, added int, ok bool) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	deadline := time.After(guard)
	for {
		mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("added%d", added)}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		added++
		select {
		case v = <-got:
			return v, added, true
		case <-tick.C:
		case <-deadline:
			return v, added, false
		}
	}
}
