package workload

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SDKRevision is the MCP revision the SDK targets of `mcp-flow bench` ask
// for unless told otherwise: the latest with ping (2026-07-28 has none, and
// the open loop measures ping on every transport).
const SDKRevision = "2025-11-25"

// SDK is a go-sdk client session (Streamable HTTP, stdio) as a Target:
// large results travel inline, as base64, as they must there. Zero Calls
// are DefaultLarge and DefaultEcho.
type SDK struct {
	Session             *mcp.ClientSession
	LargeCall, EchoCall Call
}

// Ping sends MCP's ping.
func (t *SDK) Ping(ctx context.Context) error { return t.Session.Ping(ctx, nil) }

// Echo calls the echo tool.
func (t *SDK) Echo(ctx context.Context, text string) error {
	_, err := t.call(ctx, orDefault(t.EchoCall, DefaultEcho).params(0, text))
	return err
}

// Fetch calls the large-result tool for n bytes and counts its content's
// payload: text as is, image and audio data and resource blobs decoded.
func (t *SDK) Fetch(ctx context.Context, n int64) (int64, error) {
	return t.call(ctx, orDefault(t.LargeCall, DefaultLarge).params(n, ""))
}

func (t *SDK) call(ctx context.Context, p map[string]any) (int64, error) {
	r, err := t.Session.CallTool(ctx, &mcp.CallToolParams{Name: p["name"].(string), Arguments: p["arguments"]})
	if err != nil {
		return 0, err
	}
	if r.IsError {
		return 0, fmt.Errorf("the tool %s failed", p["name"])
	}
	var got int64
	for _, c := range r.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			got += int64(len(c.Text))
		case *mcp.ImageContent:
			got += int64(len(c.Data))
		case *mcp.AudioContent:
			got += int64(len(c.Data))
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				got += int64(len(c.Resource.Text) + len(c.Resource.Blob))
			}
		}
	}
	return got, nil
}

// Close ends the session.
func (t *SDK) Close() { t.Session.Close() }
