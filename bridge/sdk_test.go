package bridge_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKOverMCPFlow: a go-sdk server and a go-sdk client talk over
// MCP-Flow by swapping their transports (bridge.ServeSDK and
// bridge.ClientTransport), in one process, over real QUIC.
func TestGoSDKOverMCPFlow(t *testing.T) {
	t.Parallel()
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	bridge.ServeSDK(&cfg, sdkfixture.NewServer(), flowtest.Quiet)
	srv := flowtest.Serve(t, cfg)
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &bridge.ClientTransport{Config: bridge.StdioConfig{URL: srv.URL(),
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: flowtest.Quiet}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo.Name; got != "sdk-fixture" {
		t.Fatalf("server %q", got)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]string{"text": "ok"}})
	if err != nil || r.Content[0].(*mcp.TextContent).Text != "ok" {
		t.Fatalf("echo: %v", err)
	}
	const n = 2 << 20
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "blob", Arguments: map[string]int{"bytes": n}})
	if err != nil {
		t.Fatal(err)
	}
	img := r.Content[0].(*mcp.ImageContent)
	sum := sha256.Sum256(img.Data)
	if len(img.Data) != n || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(n) {
		t.Fatalf("image: %d bytes", len(img.Data))
	}
}

// cancelFixture is a go-sdk server with a tool that reports progress and one
// that waits until it is cancelled, and says so: its Tag on started when it
// runs, on cancelled when its context ends.
func cancelFixture(started, cancelled chan<- string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "cancel-fixture", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "steps", Description: "three progress updates"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			for i := 1; i <= 3; i++ {
				if tok := req.Params.GetProgressToken(); tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: fmt.Sprintf("段階 %d", i)})
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "waits to be cancelled"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{ Tag string }) (*mcp.CallToolResult, any, error) {
			started <- in.Tag
			<-ctx.Done()
			cancelled <- in.Tag
			return nil, nil, ctx.Err()
		})
	return s
}

// TestCancelAndProgressThroughTheBridges: cancellation and progress cross
// every translation. An MCP-Flow client's $/cancel reaches the go-sdk
// server behind the upstream as notifications/cancelled, and its progress
// comes back through Request.Progress; a plain MCP host's
// notifications/cancelled crosses the front as $/cancel and the upstream
// back to notifications/cancelled, and progress reaches it as notifications.
func TestCancelAndProgressThroughTheBridges(t *testing.T) {
	t.Parallel()
	started, cancelled := make(chan string, 2), make(chan string, 2)
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	bridge.ServeSDK(&cfg, cancelFixture(started, cancelled), flowtest.Quiet)
	srv := flowtest.Serve(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// tagOn waits up to 10 s for the upstream tool to report tag on ch (the
	// call it started, or was cancelled in) and says what went wrong.
	tagOn := func(ch <-chan string, tag, what string) error {
		select {
		case got := <-ch:
			if got != tag {
				return fmt.Errorf("the upstream tool %s %q, want %q", what, got, tag)
			}
			return nil
		case <-time.After(10 * time.Second):
			return fmt.Errorf("%s: the upstream tool was not %s in 10 s", tag, what)
		}
	}
	waitCancelled := func(tag string) {
		t.Helper()
		if err := tagOn(cancelled, tag, "cancelled"); err != nil {
			t.Fatal(err)
		}
	}
	// cancelOnceStarted cancels the call tagged tag once the upstream tool
	// runs it, so that the cancellation crosses every bridge rather than
	// stopping the call on its way in. The test waits on done before it
	// ends, so a failure is reported from the goroutine in time.
	cancelOnceStarted := func(tag string, cancel context.CancelFunc) (done <-chan struct{}) {
		d := make(chan struct{})
		go func() {
			defer close(d)
			defer cancel()
			if err := tagOn(started, tag, "started"); err != nil {
				t.Error(err)
			}
		}()
		return d
	}

	// An MCP-Flow client. Without datagrams, progress rides the control
	// stream, in order and before the result, so all three must arrive;
	// progress datagrams may be lost or overtaken by the result (spec §6),
	// and the flow tests cover them.
	s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet, DisableDatagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []flow.Progress
	var mu sync.Mutex
	flowProgress := newProgressCount(3)
	if _, err := s.Call(ctx, "tools/call", map[string]any{"name": "steps", "arguments": map[string]any{}},
		flow.WithProgress(func(p flow.Progress) { mu.Lock(); got = append(got, p); mu.Unlock(); flowProgress.add() })); err != nil {
		t.Fatal(err)
	}
	flowProgress.wait(t, "steps, from an MCP-Flow client")
	mu.Lock()
	if len(got) != 3 || got[2].Progress != 3 || got[2].Total != 3 || got[2].Message != "段階 3" {
		t.Fatalf("progress %+v", got)
	}
	mu.Unlock()
	cctx, ccancel := context.WithCancel(ctx)
	cancelled1 := cancelOnceStarted("flow", ccancel)
	if _, err := s.Call(cctx, "tools/call", map[string]any{"name": "wait", "arguments": map[string]any{"Tag": "flow"}}); err == nil {
		t.Fatal("a cancelled call answered")
	}
	<-cancelled1
	waitCancelled("flow")

	// A plain MCP host through the stdio front.
	progress := newProgressCount(3)
	c := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.add() },
	})
	cs, err := c.Connect(ctx, &bridge.ClientTransport{Config: bridge.StdioConfig{URL: srv.URL(),
		Client: flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet}, Logger: flowtest.Quiet}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
	params.SetProgressToken("host-token")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	progress.wait(t, "steps, from a plain MCP host through the stdio front")
	hctx, hcancel := context.WithCancel(ctx)
	cancelled2 := cancelOnceStarted("host", hcancel)
	if _, err := cs.CallTool(hctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"Tag": "host"}}); err == nil {
		t.Fatal("a cancelled call answered")
	}
	<-cancelled2
	waitCancelled("host")
}
