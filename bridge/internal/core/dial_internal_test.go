package core

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/draft02/draft02test"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// messages is a slog handler that keeps the records' messages.
type messages struct {
	mu   sync.Mutex
	msgs []string
}

func (m *messages) Enabled(context.Context, slog.Level) bool { return true }
func (m *messages) WithAttrs([]slog.Attr) slog.Handler       { return m }
func (m *messages) WithGroup(string) slog.Handler            { return m }
func (m *messages) Handle(_ context.Context, r slog.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.msgs = append(m.msgs, r.Message)
	return nil
}

func (m *messages) count(substr string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.msgs {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

// TestDialRemembersDraft02: in WebTransport auto, the core's first dial of a
// draft-02 server is refused in the current dialect and dialled again in
// draft-02; the next dials (the reconnections) go in draft-02 at once,
// without the refused round trip; "current" does not reach the server, and
// says why in one cause.
func TestDialRemembersDraft02(t *testing.T) {
	p := draft02test.Start(t)
	log := &messages{}
	cfg := StdioConfig{URL: p.URL, Client: flow.ClientConfig{TLSConfig: p.TLS, Logger: flowtest.Quiet}, Logger: slog.New(log)}
	c := New(cfg, nil, nil) // dial alone reaches no front
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		s, err := c.dial(ctx, flow.InitializeParams{})
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		s.Close()
	}
	if n := log.count("speaks WebTransport draft-02"); n != 1 {
		t.Fatalf("the draft-02 refusal was met %d times in 3 dials, want once (the first)", n)
	}
	cfg.WebTransport = WebTransportCurrent
	_, err := New(cfg, nil, nil).dial(ctx, flow.InitializeParams{})
	u, ok := err.(*UnreachableError)
	if !ok || !u.Final || !strings.Contains(u.Why, "draft-02") || !strings.Contains(u.Fix, "-webtransport auto") {
		t.Fatalf("-webtransport current against a draft-02 server: %#v", err)
	}
	t.Logf("current: %v", u)
}
