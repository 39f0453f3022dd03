package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioFrontTimeToReconnect (make lb; MCP_FLOW_LB=1): a go-sdk host
// on `mcp-flow bridge stdio` calls echo on server A; A is killed (SIGKILL)
// and B takes its address and certificate; the host calls echo again,
// retrying on errors, until one is answered. Measured: from B ready to
// that answer, with a fleet key shared by A and B and without, rounds
// times each, reported side by side (docs/deploy.md, "Fleet"). With the
// key the front's session is reset at its first packet to B and the front
// reconnects at once; without, it waits for the QUIC idle timeout first. A
// measurement: it fails only if no call is answered within the hang guard.
func TestStdioFrontTimeToReconnect(t *testing.T) {
	if os.Getenv("MCP_FLOW_LB") == "" {
		t.Skip("a measurement of make lb (MCP_FLOW_LB=1)")
	}
	const rounds = 3
	dir := t.TempDir()
	srvBin := build(t, dir, "../mcp-flow-server")
	keyFile := filepath.Join(dir, "fleet.key")
	if _, errs, code := runCLI(t, srvBin, "-gen-fleet-key", keyFile); code != 0 {
		t.Fatalf("-gen-fleet-key: exit %d: %s", code, errs)
	}
	took := map[string][]time.Duration{}
	var mu sync.Mutex
	t.Run("rounds", func(t *testing.T) {
		for i := range rounds {
			for _, c := range []struct {
				name  string
				flags []string
			}{{"shared key", []string{"-fleet-key-file", keyFile}}, {"no key", nil}} {
				t.Run(fmt.Sprintf("%s %d", c.name, i), func(t *testing.T) {
					t.Parallel()
					certDir := t.TempDir()
					urlA, hash, a, _, _ := liveServer(t, srvBin, append([]string{"-cert-dir", certDir}, c.flags...)...)
					cs, err, _, stderr, _ := stdioHost(t, urlA, hash, "")
					if err != nil {
						t.Fatal(err)
					}
					echo := func(ctx context.Context) error {
						_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
						return err
					}
					if err := echo(context.Background()); err != nil {
						t.Fatal(err)
					}
					kill(t, a)
					u, _ := url.Parse(urlA)
					liveServer(t, srvBin, append([]string{"-cert-dir", certDir, "-addr", u.Host}, c.flags...)...)
					ready := time.Now()
					// Hang guard: 10x the slowest round (the idle timeout, 8 s,
					// plus a reconnection: 8.02 s measured).
					deadline := ready.Add(90 * time.Second)
					var last error
					for time.Now().Before(deadline) {
						ctx, cancel := context.WithDeadline(context.Background(), deadline)
						last = echo(ctx)
						cancel()
						if last == nil {
							break
						}
					}
					if last != nil {
						t.Fatalf("%s: no echo answered within 90 s of B: %v; bridge stderr:\n%s", c.name, last, stderr)
					}
					mu.Lock()
					took[c.name] = append(took[c.name], time.Since(ready))
					mu.Unlock()
				})
			}
		}
	})
	t.Logf("the stdio front's host answered again after SIGKILL and takeover of the address: shared fleet key: %s; no key: %s", flowtest.Spread(took["shared key"]), flowtest.Spread(took["no key"]))
}
