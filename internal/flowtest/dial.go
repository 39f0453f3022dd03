package flowtest

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
)

// Dial connects an MCP-Flow client to srv for the test (30 s at most),
// closed when the test ends.
func Dial(t testing.TB, srv *flow.Server) (context.Context, *flow.Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: ClientTLS(t), Logger: Quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ctx, s
}
