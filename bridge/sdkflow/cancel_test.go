package sdkflow_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Cancellation and progress across the transport, in the directions the
// go-sdk client of sdkflow_test.go does not take: an MCP-Flow client's to
// the go-sdk server, and the go-sdk server's own request cancelled.

// TestFlowClientToGoSDKServer: an MCP-Flow client's calls reach the go-sdk
// server: its progress comes back through Request.Progress (all of it on
// the control stream without datagrams; as datagrams, which may be lost or
// superseded, the newest before the result, spec §6.2), and its $/cancel
// reaches the handler's context as notifications/cancelled.
func TestFlowClientToGoSDKServer(t *testing.T) {
	f, s := newFixture()
	srv := serve(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, datagrams := range []bool{false, true} {
		fs, err := flow.Dial(ctx, srv.flow.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet, DisableDatagrams: !datagrams})
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		var mu sync.Mutex
		var got []flow.Progress
		if _, err := fs.Call(ctx, "tools/call", map[string]any{"name": "steps", "arguments": map[string]any{}},
			flow.WithProgress(func(p flow.Progress) { mu.Lock(); got = append(got, p); mu.Unlock() })); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		last := got[len(got)-1]
		if !datagrams && len(got) != 3 || last.Progress != 3 || last.Total != 3 || last.Message != "段階 3" {
			t.Fatalf("datagrams %v: progress %+v", datagrams, got)
		}
		mu.Unlock()
		tag := fmt.Sprint("flow-datagrams-", datagrams)
		cctx, ccancel := context.WithCancel(ctx)
		go func() {
			<-f.started
			ccancel()
		}()
		if _, err := fs.Call(cctx, "tools/call", map[string]any{"name": "wait", "arguments": map[string]any{"Tag": tag}}); err == nil {
			t.Fatal("a cancelled call answered")
		}
		tagOn(t, f.cancelled, tag, "cancelled")
	}
}

// TestServerCancelsItsRequest: the go-sdk server gives up on its own
// request to the client (an elicitation whose context it cancels once the
// client's handler runs): its notifications/cancelled crosses MCP-Flow as
// $/cancel and reaches the go-sdk client's handler as the end of its
// context (MCP 2025-11-25: a 2026-07-28 client takes no server requests).
func TestServerCancelsItsRequest(t *testing.T) {
	asking, handlerCancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "asks the client, then gives up"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ectx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() {
				select {
				case <-asking:
					cancel()
				case <-ectx.Done():
				}
			}()
			_, err := req.Session.Elicit(ectx, &mcp.ElicitParams{Message: "name?", RequestedSchema: &jsonschema.Schema{Type: "object"}})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(err)}}}, nil, nil
		})
	srv := serve(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quit := make(chan struct{}) // a failed test lets the handler go
	_, cs := connect(t, ctx, srv.flow, protocol.MCP20251125, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asking <- struct{}{}
			select {
			case <-ctx.Done():
				handlerCancelled <- struct{}{}
				return nil, ctx.Err()
			case <-quit:
				return nil, errors.New("the test is over")
			}
		},
	})
	defer cs.Close()
	defer close(quit)
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the server's elicitation ended with: %s", r.Content[0].(*mcp.TextContent).Text)
	select {
	case <-handlerCancelled:
	case <-time.After(10 * time.Second): // the whole test takes about 0.1 s
		t.Fatal("the client's elicitation handler was not cancelled in 10 s")
	}
}
