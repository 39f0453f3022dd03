package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/mcp-flow/mcp-flow/bench/workload"
	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/bridge/sdkflow"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk over MCP-Flow (issue 38): a go-sdk client and the go-sdk
// server sdkfixture, both in this process, over package sdkflow's
// transport, over the pipe adapter it replaced, and over the go-sdk's own
// Streamable HTTP, measured in turns in the same run.

// dialSDKFlow serves sdkfixture with sdkflow.Serve and connects a go-sdk
// client over sdkflow.ClientTransport.
func dialSDKFlow(b testing.TB) *sdkTarget {
	cfg := flow.ServerConfig{Logger: quiet, Limits: flow.Limits{MaxRequestsInFlight: 1024}}
	sdkflow.Serve(&cfg, sdkfixture.NewServer(), &sdkflow.ServerOptions{Logger: quiet})
	return connectSDK(b, &sdkflow.ClientTransport{URL: flowtest.Serve(b, cfg).URL(), Client: flow.ClientConfig{TLSConfig: pinnedTLS(), Logger: quiet}, Logger: quiet})
}

// sdkRawBlob is the tool dialSDKFlowRaw adds to sdkfixture: blob's bytes
// (demotools.Generate) as a raw stream, sdkflow.StreamResult.
const sdkRawBlob = "rawblob"

// dialSDKFlowRaw is dialSDKFlow with the raw path (spec §10): the server
// has sdkfixture's tools and sdkRawBlob, whose bytes go as they are on an
// execution stream, and the client's transport keeps raw streams
// (KeepStreams) and reads them with sdkflow.OpenStream. Its Fetch calls
// sdkRawBlob.
func dialSDKFlowRaw(b testing.TB) *sdkRawTarget {
	srv := sdkfixture.NewServer()
	mcp.AddTool(srv, &mcp.Tool{Name: sdkRawBlob, Description: "N deterministic bytes, raw"},
		func(ctx context.Context, req *mcp.CallToolRequest, a sdkfixture.BlobArgs) (*mcp.CallToolResult, any, error) {
			res, err := sdkflow.StreamResult(ctx, req, "application/octet-stream", func(_ context.Context, w io.Writer) error {
				_, err := io.Copy(w, demotools.Generate(a.Bytes))
				return err
			})
			return res, nil, err
		})
	cfg := flow.ServerConfig{Logger: quiet, Limits: flow.Limits{MaxRequestsInFlight: 1024}}
	sdkflow.Serve(&cfg, srv, &sdkflow.ServerOptions{Logger: quiet})
	return &sdkRawTarget{connectSDK(b, &sdkflow.ClientTransport{URL: flowtest.Serve(b, cfg).URL(), KeepStreams: true,
		Client: flow.ClientConfig{TLSConfig: pinnedTLS(), Logger: quiet}, Logger: quiet})}
}

// sdkRawTarget is a go-sdk client over sdkflow that fetches the raw way.
type sdkRawTarget struct{ *sdkTarget }

// Fetch calls sdkRawBlob and reads its stream with sdkflow.OpenStream.
func (t *sdkRawTarget) Fetch(ctx context.Context, n int64) (int64, error) {
	r, err := t.cs.CallTool(ctx, &mcp.CallToolParams{Name: sdkRawBlob, Arguments: sdkfixture.BlobArgs{Bytes: n}})
	if err != nil {
		return 0, err
	}
	link, ok := r.Content[0].(*mcp.ResourceLink)
	if !ok {
		return 0, fmt.Errorf("%s answered %T, not a resource_link", sdkRawBlob, r.Content[0])
	}
	rd, err := sdkflow.OpenStream(ctx, link.URI)
	if err != nil {
		return 0, err
	}
	defer rd.Close()
	return workload.CopyDiscard(rd)
}

// dialSDKPipe is the pipe adapter as bridge.ServeSDK and
// bridge.ClientTransport were before package sdkflow (bridge/sdk.go at
// commit 25c0f42): each side runs the bridges over in-memory pipes of
// NDJSON, a stdio front for the client and a pipe upstream for the server,
// so every message is written as a line and parsed again on each side.
func dialSDKPipe(b testing.TB) *sdkTarget {
	srv := sdkfixture.NewServer()
	cfg := flow.ServerConfig{Logger: quiet, Limits: flow.Limits{MaxRequestsInFlight: 1024}}
	bridge.NewPipeUpstream(func(ctx context.Context) (io.WriteCloser, io.Reader, func(), error) {
		upR, bridgeW := io.Pipe()
		bridgeR, upW := io.Pipe()
		ss, err := srv.Connect(context.WithoutCancel(ctx), &mcp.IOTransport{Reader: upR, Writer: upW, MaxLineLength: -1}, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		return bridgeW, bridgeR, func() { _ = ss.Close() }, nil
	}, 0, quiet).Configure(&cfg)
	url := flowtest.Serve(b, cfg).URL()
	return connectSDK(b, transportFunc(func(ctx context.Context) (mcp.Connection, error) {
		hostR, bridgeW := io.Pipe()
		bridgeR, hostW := io.Pipe()
		// InlineLimit as sdkflow's, so that the large result is inlined
		// by both (the stdio front's default, 8 MiB, would offload it).
		front := bridge.NewStdio(bridge.StdioConfig{URL: url, Client: flow.ClientConfig{TLSConfig: pinnedTLS(), Logger: quiet}, Logger: quiet, InlineLimit: sdkflow.DefaultInlineLimit})
		go func() { bridgeW.CloseWithError(front.Run(context.WithoutCancel(ctx), bridgeR, bridgeW)) }()
		return (&mcp.IOTransport{Reader: hostR, Writer: hostW, MaxLineLength: -1}).Connect(ctx)
	}))
}

// dialSDKDirect connects a go-sdk client to sdkfixture with no transport
// at all: two connections joined by channels that pass the go-sdk's
// messages as they are. What it measures is the go-sdk's own cost at both
// ends (its JSON, its goroutines), which every transport pays: the
// ceiling of any.
func dialSDKDirect(b testing.TB) *sdkTarget {
	toServer, toClient := make(chan jsonrpc.Message), make(chan jsonrpc.Message)
	done, once := make(chan struct{}), new(sync.Once)
	srvConn := &directConn{in: toServer, out: toClient, done: done, once: once}
	cliConn := &directConn{in: toClient, out: toServer, done: done, once: once}
	if _, err := sdkfixture.NewServer().Connect(context.Background(), transportFunc(func(context.Context) (mcp.Connection, error) { return srvConn, nil }), nil); err != nil {
		b.Fatal(err)
	}
	return connectSDK(b, transportFunc(func(context.Context) (mcp.Connection, error) { return cliConn, nil }))
}

// directConn is one end of dialSDKDirect's pair; closing either closes both.
type directConn struct {
	in   <-chan jsonrpc.Message
	out  chan<- jsonrpc.Message
	done chan struct{}
	once *sync.Once
}

func (c *directConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *directConn) Write(ctx context.Context, m jsonrpc.Message) error {
	select {
	case c.out <- m:
		return nil
	case <-c.done:
		return mcp.ErrConnectionClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *directConn) Close() error      { c.once.Do(func() { close(c.done) }); return nil }
func (c *directConn) SessionID() string { return "" }

type transportFunc func(ctx context.Context) (mcp.Connection, error)

func (f transportFunc) Connect(ctx context.Context) (mcp.Connection, error) { return f(ctx) }

func connectSDK(b testing.TB, t mcp.Transport) *sdkTarget {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, t, nil)
	if err != nil {
		b.Fatal(err)
	}
	return &sdkTarget{cs: cs}
}

// sdkTransportOrders returns the orders BenchmarkGoSDKTransport's rounds
// take n transports in: each rotation and its reverse, so that each
// follows each other one in turn (and pays for its garbage as often).
func sdkTransportOrders(n int) [][]int {
	var orders [][]int
	for r := range n {
		o := make([]int, n)
		for i := range o {
			o[i] = (r + i) % n
		}
		orders = append(orders, o)
	}
	for r := range n {
		o := slices.Clone(orders[r])
		slices.Reverse(o)
		orders = append(orders, o)
	}
	return orders
}

// sdkTransportLarge is the large result's size: base64 through the go-sdk
// at both ends is the slow part of every transport here, as in
// BenchmarkLarge, so it is 16 MiB in either mode.
const sdkTransportLarge = 16 << 20

// BenchmarkGoSDKTransport: a go-sdk client to a go-sdk server over
// sdkflow, over the pipe adapter, over the go-sdk's Streamable HTTP, and
// with no transport at all (sdk-direct: the go-sdk's own cost, which
// bounds what any transport of it can reach): echo calls/s at concurrency
// 16, and a large result's MB/s (inline base64 at both ends, as the
// go-sdk's API gives and takes it; over MCP-Flow it crosses on an
// execution stream), and the large result the raw way too (sdkflow-raw:
// sdkflow.StreamResult at the server, KeepStreams and OpenStream at the
// client; no base64, no JSON string, at either end). The transports take
// turns in rounds (sdkTransportOrders, as BenchmarkEcho/flow-interleaved
// does: samples taken seconds apart on a shared machine compare its load),
// each sample after a collection; each ratio is the median over the rounds
// of two rates of the same round. Beside the rates, each one's CPU time
// per operation (this process: all run both ends here), which a loaded
// machine does not inflate.
func BenchmarkGoSDKTransport(b *testing.B) {
	ctx := context.Background()
	type target struct {
		name string
		t    workload.Target
	}
	targets := []target{{"sdkflow", dialSDKFlow(b)}, {"pipe", dialSDKPipe(b)}, {"sdk-http", dialSDKHTTP(b)}, {"sdk-direct", dialSDKDirect(b)}}
	raw := target{"sdkflow-raw", dialSDKFlowRaw(b)}
	defer func() {
		for _, tg := range append(targets, raw) {
			tg.t.Close()
		}
	}()
	ratios := [][2]string{{"sdkflow", "pipe"}, {"sdkflow", "sdk-http"}, {"sdk-direct", "sdk-http"}, {"sdkflow", "sdk-direct"}}
	// interleave runs sample (ops operations) on each of targets in every
	// round and reports each one's median rate in unit, its median CPU
	// time per operation (this process's: both ends, and the server of
	// none runs elsewhere; waiting for a core does not inflate it as it
	// does a rate on a loaded machine), and the median ratios.
	interleave := func(b *testing.B, targets []target, ratios [][2]string, unit string, ops int, sample func(t workload.Target) float64) {
		rate, cpu := map[string][]float64{}, map[string][]float64{}
		ratio := map[[2]string][]float64{}
		for _, order := range sdkTransportOrders(len(targets)) {
			got := map[string]float64{}
			for _, i := range order {
				runtime.GC()
				c0 := cpuTime(0)
				got[targets[i].name] = sample(targets[i].t)
				rate[targets[i].name] = append(rate[targets[i].name], got[targets[i].name])
				cpu[targets[i].name] = append(cpu[targets[i].name], float64((cpuTime(0)-c0).Microseconds())/float64(ops))
			}
			for _, r := range ratios {
				ratio[r] = append(ratio[r], got[r[0]]/got[r[1]])
			}
		}
		for _, tg := range targets {
			b.ReportMetric(median(rate[tg.name]), tg.name+"-"+unit)
			b.ReportMetric(median(cpu[tg.name]), tg.name+"-cpu-µs/op")
		}
		for _, r := range ratios {
			b.ReportMetric(median(ratio[r]), r[0]+"/"+r[1])
		}
		reportLoad(b)
	}
	b.Run("echo/c=16", func(b *testing.B) {
		per := max(b.N/(2*len(targets)), 1000) // b.N over the rounds
		interleave(b, targets, ratios, "calls/s", per, func(t workload.Target) float64 {
			t0 := time.Now()
			if _, err := workload.EchoCalls(ctx, t, 16, per); err != nil {
				b.Fatal(err)
			}
			return float64(per) / time.Since(t0).Seconds()
		})
	})
	const n = sdkTransportLarge
	b.Run("large/"+sizeName(n), func(b *testing.B) {
		interleave(b, append(slices.Clone(targets), raw), append(ratios, [2]string{"sdkflow-raw", "sdk-http"}, [2]string{"sdkflow-raw", "sdkflow"}), "MB/s", 1, func(t workload.Target) float64 {
			t0 := time.Now()
			if got, err := t.Fetch(ctx, n); err != nil || got != n {
				b.Fatalf("fetched %d of %d bytes: %v", got, n, err)
			}
			return float64(n) / time.Since(t0).Seconds() / 1e6
		})
	})
}
