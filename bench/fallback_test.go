package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/fallback"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
)

// firstResultDials is how many dials each line of BenchmarkFirstResult
// times per b.Loop iteration (the fallback's take ~0.45 s each: the
// budget, then Streamable HTTP).
const firstResultDials = 10

// BenchmarkFirstResult: the time to the first result, from starting to
// dial until the result of a first tools/call echo, each dial a fresh
// fallback.Client (closed after, untimed), against one mcp-flow-server
// process (MCP-Flow on UDP, Streamable HTTP on TCP at the same host, port
// and path) reached directly and through a lossrelay.Origin that drops
// every UDP datagram and forwards TCP (issue 26):
//
//   - flow-open: fallback.Dial (Auto) on the direct URL, MCP-Flow;
//   - http-blocked: Streamable HTTP alone (fallback.StreamableHTTP) on the
//     blocked URL, the baseline;
//   - fallback-blocked: fallback.Dial (Auto) on the blocked URL, which
//     waits fallback.DefaultBudget for a QUIC handshake before it dials
//     Streamable HTTP too. Each of its dials is paired with one of
//     Streamable HTTP alone, in turns (either goes first every other
//     round), so that the comparison takes both on the same moment of a
//     shared machine: over-http-p50-ms and over-http-max-ms are the median
//     and the largest of the pairs' differences (the goal: at most 1 s),
//     fallback/http the ratio of the two p50s over the pairs.
//
// Each line reports ttfr-p50-ms and ttfr-max-ms over its dials.
func BenchmarkFirstResult(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "mcp-flow-server")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server").CombinedOutput(); err != nil {
		b.Fatalf("go build mcp-flow-server: %v\n%s", err, out)
	}
	url, hash := flowtest.ServerProcess(b, bin)
	blocked := flowtest.Behind(b, url, lossrelay.Blocked, lossrelay.Blocked)
	fc := flow.ClientConfig{TLSConfig: flowtest.PinnedTLS(b, hash), Logger: quiet, Info: flow.Implementation{Name: "bench-first-result", Version: "1"}}
	auto := fallback.Config{Flow: fc}
	httpOnly := fallback.Config{Flow: fc, Transport: fallback.StreamableHTTP}

	b.Run("flow-open", func(b *testing.B) {
		firstResult(b, url, auto, fallback.MCPFlow) // warm-up, untimed
		var l latencies
		for b.Loop() {
			for range firstResultDials {
				l = append(l, firstResult(b, url, auto, fallback.MCPFlow))
			}
		}
		l.reportMs(b, "ttfr-")
	})
	b.Run("http-blocked", func(b *testing.B) {
		firstResult(b, blocked, httpOnly, fallback.StreamableHTTP)
		var l latencies
		for b.Loop() {
			for range firstResultDials {
				l = append(l, firstResult(b, blocked, httpOnly, fallback.StreamableHTTP))
			}
		}
		l.reportMs(b, "ttfr-")
	})
	b.Run("fallback-blocked", func(b *testing.B) {
		firstResult(b, blocked, auto, fallback.StreamableHTTP)
		var fb, h latencies
		var over []float64
		for b.Loop() {
			for i := range firstResultDials {
				var x, y time.Duration
				if i%2 == 0 {
					x = firstResult(b, blocked, auto, fallback.StreamableHTTP)
					y = firstResult(b, blocked, httpOnly, fallback.StreamableHTTP)
				} else {
					y = firstResult(b, blocked, httpOnly, fallback.StreamableHTTP)
					x = firstResult(b, blocked, auto, fallback.StreamableHTTP)
				}
				fb, h = append(fb, x), append(h, y)
				over = append(over, msOf(x-y))
			}
		}
		fb.reportMs(b, "ttfr-")
		h.reportMs(b, "http-")
		b.ReportMetric(median(over), "over-http-p50-ms")
		b.ReportMetric(slices.Max(over), "over-http-max-ms")
		b.ReportMetric(msOf(fb.p50())/msOf(h.p50()), "fallback/http")
		b.ReportMetric(msOf(fallback.DefaultBudget), "budget-ms")
		reportLoad(b)
	})
}

// firstResult dials url with cfg, calls echo once and returns the time
// from the start of the dial to the result; the Client is closed after,
// untimed. A dial over another transport than want fails b.
func firstResult(b *testing.B, url string, cfg fallback.Config, want fallback.Transport) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t0 := time.Now()
	c, err := fallback.Dial(ctx, url, cfg)
	if err != nil {
		b.Fatalf("dial %s: %v", url, err)
	}
	defer c.Close()
	r, err := c.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "first"}}, nil)
	took := time.Since(t0)
	if err != nil {
		b.Fatalf("echo over %s: %v", c.Transport(), err)
	}
	r.Close()
	if !strings.Contains(string(r.Result), `"text":"first"`) {
		b.Fatalf("echo over %s: %.200s", c.Transport(), r.Result)
	}
	if c.Transport() != want {
		b.Fatalf("dial %s: %s (%s), want %s", url, c.Transport(), c.Reason(), want)
	}
	return took
}

// p50 is the median sample (the upper of the middle two).
func (l latencies) p50() time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	return s[len(s)/2]
}

// reportMs reports the p50 and the largest of l in milliseconds, as
// prefix+"p50-ms" and prefix+"max-ms".
func (l latencies) reportMs(b *testing.B, prefix string) {
	if len(l) == 0 {
		return
	}
	b.ReportMetric(msOf(l.p50()), prefix+"p50-ms")
	b.ReportMetric(msOf(slices.Max(l)), prefix+"max-ms")
}

func msOf(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
