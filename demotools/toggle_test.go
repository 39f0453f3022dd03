package demotools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// TestToggle: toggle shows the hidden tool toggled (tools/list names it,
// it answers) and hides it again (gone from the list, its call refused
// -32602), and each time a 2026-07-28 client's subscriptions/listen and a
// 2025 session both hear notifications/tools/list_changed, then
// notifications/resources/updated of the resource mcp-flow://toggled, which
// the one's listen names and the other subscribed to (resources/subscribe),
// and whose text says the new state (spec §11.7).
func TestToggle(t *testing.T) {
	mux, caps := flowtest.ToolsMux(t, demotools.Config{})
	srv := flowtest.Serve(t, flow.ServerConfig{Handler: mux, Capabilities: caps})
	// A hang guard: the whole test takes under 50 ms on loopback.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old := make(chan *jsonrpc.Request, 4)
	dial := func(v string, note func(*flow.Session, *jsonrpc.Request)) *flow.Session {
		s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Logger(), ProtocolVersion: v, Hooks: flow.Hooks{Notification: note}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s25 := dial("", func(_ *flow.Session, n *jsonrpc.Request) { old <- n })
	s26 := dial(protocol.MCP20260728, nil)
	events := make(chan *jsonrpc.Request, 4)
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	go s26.Listen(lctx, flow.Subscriptions{ToolsListChanged: true, ResourceSubscriptions: []string{demotools.ToggledURI}}, func(n *jsonrpc.Request) { events <- n })
	if _, err := s25.Call(ctx, "resources/subscribe", map[string]string{"uri": demotools.ToggledURI}); err != nil {
		t.Fatal(err)
	}
	wait := func(c <-chan *jsonrpc.Request, want string) {
		t.Helper()
		select {
		case n := <-c:
			if n.Method != want {
				t.Fatalf("got %s %s, want %s", n.Method, n.Params, want)
			}
		case <-ctx.Done():
			t.Fatalf("no %s", want)
		}
	}
	wait(events, protocol.MethodSubscriptionsAcknowledged)
	listed := func() bool {
		t.Helper()
		r, err := s25.Call(ctx, "tools/list", nil)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(r.Result), `"name":"`+demotools.Toggled+`"`)
	}
	call := func(s *flow.Session, name string) (string, error) {
		r, err := s.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
		if err != nil {
			return "", err
		}
		var res struct{ Content []struct{ Text string } }
		if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) != 1 {
			t.Fatalf("%s: %s", name, r.Result)
		}
		return res.Content[0].Text, nil
	}
	if listed() {
		t.Fatal("toggled is listed before toggle")
	}
	for i, want := range []string{"toggled shown", "toggled hidden"} {
		got, err := call(s26, "toggle")
		if err != nil || got != want {
			t.Fatalf("toggle #%d: %q, %v; want %q", i+1, got, err, want)
		}
		wait(events, protocol.MethodToolsListChanged)
		wait(old, protocol.MethodToolsListChanged)
		wait(events, protocol.MethodResourceUpdated)
		wait(old, protocol.MethodResourceUpdated)
		shown := want == "toggled shown"
		r, err := s25.Call(ctx, "resources/read", map[string]string{"uri": demotools.ToggledURI})
		if err != nil || !strings.Contains(string(r.Result), `"text":"`+strings.TrimPrefix(want, "toggled ")+`"`) {
			t.Fatalf("after %q, resources/read %s: %v", want, demotools.ToggledURI, err)
		}
		if listed() != shown {
			t.Fatalf("after %q tools/list names toggled: %v", want, !shown)
		}
		got, err = call(s25, demotools.Toggled)
		var je *jsonrpc.Error
		if shown && (err != nil || got != "here") || !shown && (!errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams) {
			t.Fatalf("after %q toggled answered %q, %v", want, got, err)
		}
	}
}
