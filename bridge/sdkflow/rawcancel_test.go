package sdkflow_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge/sdkflow"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lateCtx is a context whose AfterFunc functions never run: it stands for
// the window in which a context has closed its Done but not yet run its
// AfterFuncs. context.AfterFunc uses a context's own AfterFunc method
// only when it finds no *context.cancelCtx behind it, which it looks for
// with Value: so lateCtx has no values.
type lateCtx struct{ context.Context }

func (lateCtx) AfterFunc(func()) func() bool { return func() bool { return true } }
func (lateCtx) Value(any) any                { return nil }

// TestRawStreamCancelInTheWindow: a kept stream's reader that sees its
// context ended before the context ran its AfterFuncs (and so stops the
// one that sends $/cancel before it ran) sends the $/cancel itself: the
// server's writer, which holds its bytes back until its context ends, is
// released (spec §7.1). Without it the writer waited on: seen failing at
// the 10 s guard (the test takes about 0.2 s).
func TestRawStreamCancelInTheWindow(t *testing.T) {
	f, s := newRawServer()
	srv := serve(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := connectKeeping(t, ctx, srv.flow, protocol.MCP20251125)
	defer cs.Close()

	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "held", Arguments: map[string]any{}})
	rctx, rcancel := context.WithCancel(ctx)
	rd, err := sdkflow.OpenStream(lateCtx{rctx}, keptLink(t, r, err).URI)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if _, err := io.ReadFull(rd, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	rcancel()
	if _, err := rd.Read(make([]byte, 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a read after its context ended: %v, want context.Canceled", err)
	}
	select {
	case err := <-f.ended:
		if err == nil {
			t.Fatal("the writer's context ended without an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the writer's context had not ended 10 s after the reader saw its own end")
	}
}
