package workload

import (
	"context"
	"sync"

	"github.com/mcp-flow/mcp-flow/flow"
)

// Flow is an MCP-Flow client session as a Target. A large result's
// execution streams (spec §6) are read in parallel to their ends; inline
// content counts as inlineBytes does. Zero Calls are DefaultLarge and
// DefaultEcho.
type Flow struct {
	Session             *flow.Session
	LargeCall, EchoCall Call
}

// Ping sends MCP's ping.
func (t *Flow) Ping(ctx context.Context) error { return t.Session.Ping(ctx) }

// Echo calls the echo tool.
func (t *Flow) Echo(ctx context.Context, text string) error {
	r, err := t.Session.Call(ctx, "tools/call", orDefault(t.EchoCall, DefaultEcho).params(0, text))
	if err != nil {
		return err
	}
	_, err = inlineBytes(r.Result)
	return err
}

// Fetch calls the large-result tool for n bytes and reads every byte.
func (t *Flow) Fetch(ctx context.Context, n int64) (int64, error) {
	r, err := t.Session.Call(ctx, "tools/call", orDefault(t.LargeCall, DefaultLarge).params(n, ""))
	if err != nil {
		return 0, err
	}
	if len(r.Refs) == 0 {
		return inlineBytes(r.Result)
	}
	if len(r.Refs) == 1 {
		sr, err := r.Stream(ctx, r.Refs[0].StreamTag)
		if err != nil {
			r.Close()
			return 0, err
		}
		return CopyDiscard(sr)
	}
	var (
		mu       sync.Mutex
		total    int64
		firstErr error
		wg       sync.WaitGroup
	)
	for _, ref := range r.Refs {
		wg.Go(func() {
			sr, err := r.Stream(ctx, ref.StreamTag)
			var got int64
			if err == nil {
				got, err = CopyDiscard(sr)
			}
			mu.Lock()
			defer mu.Unlock()
			total += got
			if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	r.Close()
	return total, firstErr
}

// Close ends the session.
func (t *Flow) Close() { t.Session.Close() }

func orDefault(c, def Call) Call {
	if c.Tool == "" {
		return def
	}
	return c
}
