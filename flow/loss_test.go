package flow_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
)

// largeLoss runs the larger loss tests (256 MiB at 10 % with delay).
var largeLoss = os.Getenv("MCP_FLOW_LOSS_LARGE") == "1"

// dialThrough puts a loss relay with the given paths in front of srv and
// dials the server through it.
func dialThrough(t *testing.T, srv *flow.Server, up, down lossrelay.Path, seed uint64) (*flow.Session, *lossrelay.Relay) {
	t.Helper()
	r, err := lossrelay.New(lossrelay.Config{Target: srv.Addr().(*net.UDPAddr), Up: up, Down: down, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close()
		u, d := r.Stats()
		t.Logf("relay: up %+v, down %+v", u, d)
	})
	cfg := flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t)}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, "https://"+r.Addr().String()+flow.DefaultPath, cfg)
	if err != nil {
		t.Fatalf("Dial through the relay: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, r
}

// TestStreamThroughLoss: an execution stream arrives byte-exact through a
// path that loses 5 % of the datagrams each way, and pings are answered
// while it flows.
func TestStreamThroughLoss(t *testing.T) {
	size, loss, delay := int64(64<<20), 0.05, time.Duration(0)
	if raceEnabled {
		size = 16 << 20 // the race detector slows QUIC ~10×
	}
	if largeLoss {
		size, loss, delay = 256<<20, 0.10, time.Millisecond
	}
	path := lossrelay.Path{Loss: loss, Delay: delay, Jitter: delay / 2}
	srv := startServer(t, nil)
	s, _ := dialThrough(t, srv, path, path, 1)

	start := time.Now()
	r := callTool(t, s, "generate", map[string]any{"bytes": size})
	sr, err := r.Stream(t.Context(), r.Refs[0].StreamTag)
	if err != nil {
		t.Fatal(err)
	}
	// Ping every 10 ms until the stream has ended: at least one must be
	// answered before it ends, and every one must be answered.
	ended := make(chan struct{})
	var pings []time.Duration
	var pingErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond) // paced, so that pings do not take the CPU from the transfer
		defer tick.Stop()
		for ; ; <-tick.C {
			t0 := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := s.Ping(ctx)
			cancel()
			if err != nil {
				pingErr = err
				return
			}
			select {
			case <-ended:
				return
			default:
				pings = append(pings, time.Since(t0))
			}
		}
	})
	h := sha256.New()
	got, err := io.Copy(h, sr)
	took := time.Since(start)
	close(ended)
	wg.Wait()
	if err != nil || got != size {
		t.Fatalf("%d of %d bytes through %v loss: %v", got, size, loss, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != demotools.GenerateSHA256(size) {
		t.Fatal("SHA-256 of the stream differs from the generator's")
	}
	if pingErr != nil {
		t.Fatalf("ping during the transfer: %v", pingErr)
	}
	if len(pings) == 0 {
		t.Fatal("no ping was answered while the stream flowed")
	}
	slowest := max(pings[0], pings[len(pings)-1])
	for _, p := range pings {
		slowest = max(slowest, p)
	}
	t.Logf("%d MiB through %v loss each way in %v (%.1f MiB/s); %d pings answered meanwhile, slowest %v",
		size>>20, loss, took.Round(time.Millisecond), float64(size)/(1<<20)/took.Seconds(), len(pings), slowest.Round(time.Microsecond))
}

// TestEchoThroughLoss: 16 callers on one session call echo for 2 s through
// a path that loses 1 % each way; every call gets its own answer, once.
func TestEchoThroughLoss(t *testing.T) {
	callers, run, loss := 16, 2*time.Second, 0.01
	if largeLoss {
		run, loss = 10*time.Second, 0.10
	}
	srv := startServer(t, nil)
	s, _ := dialThrough(t, srv, lossrelay.Path{Loss: loss}, lossrelay.Path{Loss: loss}, 2)
	var mu sync.Mutex
	answered := map[string]int{}
	sent := 0
	errs := make(chan error, callers)
	deadline := time.Now().Add(run)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				text := fmt.Sprintf("caller %d call %d", c, i)
				mu.Lock()
				sent++
				mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				resp, err := s.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": text}})
				cancel()
				if err != nil {
					errs <- fmt.Errorf("%s: %w", text, err)
					return
				}
				got := textOf(t, resp)
				if got != text {
					errs <- fmt.Errorf("%s: answered %q", text, got)
					return
				}
				mu.Lock()
				answered[got]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(answered) != sent {
		t.Errorf("%d calls, %d distinct answers", sent, len(answered))
	}
	for text, n := range answered {
		if n != 1 {
			t.Errorf("%q answered %d times", text, n)
		}
	}
	t.Logf("%d echo calls by %d callers in %v through %v loss each way", sent, callers, run, loss)
}
