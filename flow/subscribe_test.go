package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// TestResourceSubscribe: a 2025 session's resources/subscribe makes
// Server.ResourceUpdated of that URI reach it as
// notifications/resources/updated {uri}, never another URI's; after
// resources/unsubscribe it hears nothing more (the next update of a URI it
// still holds comes first). A server that does not announce
// resources.subscribe answers -32601; a missing uri is -32602 (spec §11.7).
func TestResourceSubscribe(t *testing.T) {
	srv := startServer(t, func(c *flow.ServerConfig) {
		c.Capabilities = json.RawMessage(`{"tools":{},"resources":{"subscribe":true}}`)
	})
	got := make(chan *jsonrpc.Request, 8)
	s := dial(t, srv, func(c *flow.ClientConfig) {
		c.Hooks.Notification = func(_ *flow.Session, n *jsonrpc.Request) { got <- n }
	})
	ctx := context.Background()
	call := func(method, uri string) {
		t.Helper()
		if _, err := s.Call(ctx, method, map[string]string{"uri": uri}); err != nil {
			t.Fatalf("%s %s: %v", method, uri, err)
		}
	}
	call("resources/subscribe", "test://a")
	call("resources/subscribe", "test://b")
	srv.ResourceUpdated("test://other")
	srv.ResourceUpdated("test://a")
	want := func(uri string) {
		t.Helper()
		n := next(t, got, "resources/updated "+uri)
		var p struct{ URI string }
		if n.Method != protocol.MethodResourceUpdated || json.Unmarshal(n.Params, &p) != nil || p.URI != uri {
			t.Fatalf("notification %s %s; want %s about %s", n.Method, n.Params, protocol.MethodResourceUpdated, uri)
		}
	}
	want("test://a")
	call("resources/unsubscribe", "test://a")
	srv.ResourceUpdated("test://a")
	srv.ResourceUpdated("test://b")
	want("test://b")

	var je *jsonrpc.Error
	if _, err := s.Call(ctx, "resources/subscribe", map[string]string{}); !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("subscribe without uri: %v, want -32602", err)
	}
	plain := startServer(t, func(c *flow.ServerConfig) { c.Capabilities = json.RawMessage(`{"tools":{},"resources":{}}`) })
	if _, err := dial(t, plain, nil).Call(ctx, "resources/subscribe", map[string]string{"uri": "test://a"}); !errors.As(err, &je) || je.Code != jsonrpc.CodeMethodNotFound {
		t.Fatalf("subscribe on a server without resources.subscribe: %v, want -32601", err)
	}
}
