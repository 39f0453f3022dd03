package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// listenGuard bounds each wait of the listen tests: a hang guard. Each
// step took under 5 ms on loopback (2 cores, idle); 10 s is far past 10x
// that under -race and a second suite.
const listenGuard = 10 * time.Second

// next is the next notification on c, or a failure after listenGuard.
func next(t *testing.T, c <-chan *jsonrpc.Request, what string) *jsonrpc.Request {
	t.Helper()
	select {
	case n := <-c:
		return n
	case <-time.After(listenGuard):
		t.Fatalf("no %s in %v", what, listenGuard)
		return nil
	}
}

// TestListen: a 2026-07-28 client's subscriptions/listen is acknowledged
// with the part of its filter the server's capabilities honour, then hears
// the server's tools/list_changed naming the subscription, never the
// prompts one it was not granted; a 2025 session on the same server hears
// the same ListChanged unasked (spec §11.7). Cancelling ends the listen
// with ctx's error; a shutdown ends another with the graceful result.
func TestListen(t *testing.T) {
	srv := startServer(t, func(c *flow.ServerConfig) {
		c.Capabilities = json.RawMessage(`{"tools":{"listChanged":true},"prompts":{}}`)
	})
	old := make(chan *jsonrpc.Request, 8)
	s25 := dial(t, srv, func(c *flow.ClientConfig) {
		c.Hooks.Notification = func(_ *flow.Session, n *jsonrpc.Request) { old <- n }
	})
	_ = s25
	s26 := dial(t, srv, func(c *flow.ClientConfig) { c.ProtocolVersion = protocol.MCP20260728 })

	events := make(chan *jsonrpc.Request, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	go func() {
		_, err := s26.Listen(ctx, flow.Subscriptions{ToolsListChanged: true, PromptsListChanged: true}, func(n *jsonrpc.Request) { events <- n })
		ended <- err
	}()
	ack := next(t, events, "acknowledgement")
	var ap struct {
		Notifications flow.Subscriptions `json:"notifications"`
	}
	if ack.Method != protocol.MethodSubscriptionsAcknowledged || json.Unmarshal(ack.Params, &ap) != nil {
		t.Fatalf("first message %s %s, want %s", ack.Method, ack.Params, protocol.MethodSubscriptionsAcknowledged)
	}
	if !ap.Notifications.ToolsListChanged || ap.Notifications.PromptsListChanged {
		t.Fatalf("acknowledged %s: want toolsListChanged only (prompts has no listChanged)", ack.Params)
	}
	sub := string(mcpjson.MetaValue(ack.Params, protocol.MetaSubscriptionID))
	if sub == "" {
		t.Fatalf("acknowledgement %s names no subscription", ack.Params)
	}

	if err := srv.ListChanged(protocol.MethodPromptsListChanged); err != nil {
		t.Fatal(err)
	}
	if err := srv.ListChanged(protocol.MethodToolsListChanged); err != nil {
		t.Fatal(err)
	}
	if err := srv.ListChanged("notifications/message"); !errors.Is(err, flow.ErrNotChange) {
		t.Fatalf("ListChanged(notifications/message) = %v, want ErrNotChange", err)
	}
	// The prompts change went first: the next event must be the tools one.
	n := next(t, events, "tools/list_changed")
	if n.Method != protocol.MethodToolsListChanged || string(mcpjson.MetaValue(n.Params, protocol.MetaSubscriptionID)) != sub {
		t.Fatalf("event %s %s, want %s naming subscription %s", n.Method, n.Params, protocol.MethodToolsListChanged, sub)
	}
	// The 2025 session heard both, the 2025 way (no subscription).
	for _, want := range []string{protocol.MethodPromptsListChanged, protocol.MethodToolsListChanged} {
		if n := next(t, old, want); n.Method != want {
			t.Fatalf("2025 session got %s, want %s", n.Method, want)
		}
	}

	cancel()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled listen returned %v, want context.Canceled", err)
		}
	case <-time.After(listenGuard):
		t.Fatal("cancelled listen did not end")
	}

	// A listen asking for nothing honoured ends at once, acknowledged.
	r, err := s26.Listen(context.Background(), flow.Subscriptions{PromptsListChanged: true}, func(*jsonrpc.Request) {})
	if err != nil || mcpjson.MetaValue(r.Result, protocol.MetaSubscriptionID) == nil {
		t.Fatalf("listen for nothing: %v, %v; want the result naming the subscription", r, err)
	}
	// Bad params: -32602, and the session lives on.
	_, err = s26.Call(context.Background(), protocol.MethodListen, map[string]any{})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("listen without notifications: %v, want -32602", err)
	}

	// A shutdown ends an open listen with the graceful result.
	got := make(chan *jsonrpc.Request, 8)
	type out struct {
		r   *flow.Response
		err error
	}
	res := make(chan out, 1)
	go func() {
		r, err := s26.Listen(context.Background(), flow.Subscriptions{ToolsListChanged: true}, func(n *jsonrpc.Request) { got <- n })
		res <- out{r, err}
	}()
	next(t, got, "second acknowledgement")
	sctx, scancel := context.WithTimeout(context.Background(), listenGuard)
	defer scancel()
	go srv.Shutdown(sctx)
	select {
	case o := <-res:
		if o.err != nil || mcpjson.MetaValue(o.r.Result, protocol.MetaSubscriptionID) == nil {
			t.Fatalf("listen at shutdown: %v, %v; want the graceful result", o.r, o.err)
		}
	case <-time.After(listenGuard):
		t.Fatal("listen did not end at shutdown")
	}
}
