package main

// This file is long because it is the whole of `mcp-flow bench`: its flags,
// its targets (MCP-Flow, Streamable HTTP, a stdio command), the measurement
// through package workload, and the table it prints.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/workload"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/draft02"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchUsage is bench's line of the usage summary.
const benchUsage = `mcp-flow bench -url URL | -http URL | -stdio 'CMD ARGS' ... [flags]`

// benchOptions are bench's own flags (benchFlags).
type benchOptions struct {
	flowURLs, httpURLs, stdioCmds listFlag
	large, echo                   string
	size                          byteSize
	rounds, concurrency, calls    int
	pingRate                      float64
	idle                          time.Duration
	json                          bool
	svg                           string
	revision                      string
}

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// byteSize is a size flag: 1048576, 64KiB, 64MiB, 1GiB (or k, M, G).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }
func (b *byteSize) Set(v string) error {
	mult := int64(1)
	for _, s := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"k", 1 << 10}, {"K", 1 << 10}} {
		if n, ok := strings.CutSuffix(v, s.suffix); ok {
			v, mult = n, s.m
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("%q is not a size (bytes, or with KiB, MiB, GiB)", v)
	}
	*b = byteSize(n * mult)
	return nil
}

// benchTarget is one server to measure and how to reach it.
type benchTarget struct {
	kind, addr string // "mcp-flow", "streamable-http", "stdio"
}

func (t benchTarget) label() string {
	a := t.addr
	if t.kind == "stdio" {
		f := strings.Fields(a)
		a = strings.Join(append([]string{filepath.Base(f[0])}, f[1:]...), " ")
	}
	if len(a) > 48 {
		a = a[:45] + "..."
	}
	return t.kind + " " + a
}

// runBench is `mcp-flow bench`: the benchmark suite's workloads (package
// bench/workload, the numbers of `make bench`) against any MCP server, over
// MCP-Flow (-url), Streamable HTTP (-http, the go-sdk's client) or stdio
// (-stdio, a subprocess on the go-sdk's client): the large result end to
// end, echo calls at a concurrency, and the open-loop ping (-ping-rate, on a
// schedule, each timed from its scheduled send time) idle and then during a
// large result. A table on stdout (-json: JSON instead), the stall chart with
// -svg; logs on stderr. o holds the flags given before "bench" (-cert-hash,
// -ca, -insecure, -token-file, -encoding for -url).
func runBench(o options, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp-flow bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bo := benchOptions{size: 64 << 20}
	fs.Var(&bo.flowURLs, "url", "an MCP-Flow server (https://…; -cert-hash, -ca, -insecure, -token-file apply); repeatable")
	fs.Var(&bo.httpURLs, "http", "a Streamable HTTP MCP endpoint (http(s)://…/mcp; the go-sdk's client; -token-file applies); repeatable")
	fs.Var(&bo.stdioCmds, "stdio", "a stdio MCP server: the command and its arguments, split at spaces (the go-sdk's client on its pipes); repeatable")
	fs.StringVar(&bo.large, "large", "generate bytes=N", "the large-result tool and its arguments (N: the size asked for; values that parse as JSON are JSON)")
	fs.StringVar(&bo.echo, "echo", "echo text=hello", "the echo tool and its arguments")
	fs.Var(&bo.size, "size", "the large result's size (bytes, or with KiB, MiB, GiB)")
	fs.IntVar(&bo.rounds, "rounds", 3, "large results fetched for the MB/s figure (the median is reported)")
	fs.IntVar(&bo.concurrency, "concurrency", 16, "echo calls in flight at once")
	fs.IntVar(&bo.calls, "calls", 4000, "echo calls in all")
	fs.Float64Var(&bo.pingRate, "ping-rate", 100, "open-loop pings a second (sent on a schedule, not after the answers)")
	fs.DurationVar(&bo.idle, "idle", time.Second, "how long the idle open loop runs before the large result")
	fs.BoolVar(&bo.json, "json", o.raw, "print JSON instead of the table")
	fs.StringVar(&bo.svg, "svg", "", "write the stall chart (ping latency during the large result, log scale, one series per target) to this file")
	fs.StringVar(&bo.revision, "sdk-revision", workload.SDKRevision, "-http and -stdio: the MCP revision asked for (the latest with ping by default: 2026-07-28 has none)")
	fs.StringVar(&o.certHash, "cert-hash", o.certHash, "-url: pin the server certificate's SHA-256 (hex or base64)")
	fs.StringVar(&o.caFile, "ca", o.caFile, "-url: PEM file of CA certificates to verify the server with")
	fs.BoolVar(&o.insecure, "insecure", o.insecure, "-url: accept any server certificate (development only)")
	fs.StringVar(&o.tokenFile, "token-file", o.tokenFile, "file holding an OAuth access token (Authorization: Bearer; never logged)")
	fs.StringVar(&o.encoding, "encoding", o.encoding, "-url: encodings in order of preference")
	fs.BoolVar(&o.debug, "debug", o.debug, "debug logs on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: "+benchUsage)
		fs.PrintDefaults()
	}
	if pos, err := parseInterleaved(fs, args); err != nil {
		return helpOrUsage(err)
	} else if len(pos) > 0 {
		return usage(stderr, "bench takes no arguments: give the servers with -url, -http or -stdio")
	}
	large, err := workload.ParseCall(bo.large)
	if err != nil {
		return usage(stderr, "-large: "+err.Error())
	}
	echo, err := workload.ParseCall(bo.echo)
	if err != nil {
		return usage(stderr, "-echo: "+err.Error())
	}
	if bo.pingRate <= 0 || bo.rounds < 1 || bo.concurrency < 1 || bo.calls < 1 {
		return usage(stderr, "bench: -ping-rate, -rounds, -concurrency and -calls must be positive")
	}
	var targets []benchTarget
	for _, u := range bo.flowURLs {
		targets = append(targets, benchTarget{"mcp-flow", u})
	}
	for _, u := range bo.httpURLs {
		targets = append(targets, benchTarget{"streamable-http", u})
	}
	for _, c := range bo.stdioCmds {
		if len(strings.Fields(c)) == 0 {
			return usage(stderr, "-stdio: no command")
		}
		targets = append(targets, benchTarget{"stdio", c})
	}
	if len(targets) == 0 {
		return usage(stderr, "bench: give a server with -url, -http or -stdio")
	}
	level := slog.LevelInfo
	if o.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	plan := benchPlan{large: large, echo: echo, opts: bo, log: log}
	var results []*benchResult
	for _, t := range targets {
		r, code := plan.run(ctx, o, t, stderr)
		if code != exitOK {
			return code
		}
		results = append(results, r)
	}
	if bo.svg != "" {
		labels := make([]string, len(results))
		series := make([][]workload.Point, len(results))
		for i, r := range results {
			labels[i], series[i] = r.Name, r.Ping.series
		}
		title := fmt.Sprintf("Open-loop ping (%g/s) during a %s result", bo.pingRate, sizeName(int64(bo.size)))
		if err := os.WriteFile(bo.svg, []byte(workload.SVGSeries(title, labels, series)), 0o644); err != nil {
			fmt.Fprintf(stderr, "mcp-flow: -svg: %v\n", err)
			return exitUsage
		}
	}
	if bo.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(benchReport{Size: int64(bo.size), PingRate: bo.pingRate, Large: large.String(), Echo: echo.String(), Targets: results}); err != nil {
			fmt.Fprintf(stderr, "mcp-flow: %v\n", err)
			return exitUsage
		}
		return exitOK
	}
	printBenchTable(stdout, bo, results)
	return exitOK
}

// benchPlan is what runBench measures on each target.
type benchPlan struct {
	large, echo workload.Call
	opts        benchOptions
	log         *slog.Logger
}

// run connects to t and measures it; a failure is said on stderr with its
// exit code (exitConnect: could not connect; exitRemote: a workload failed).
func (p benchPlan) run(ctx context.Context, o options, t benchTarget, stderr io.Writer) (*benchResult, int) {
	p.log.Info("bench: connecting", "target", t.kind, "addr", shownAddr(t))
	tg, err := p.connect(ctx, o, t, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-flow: bench: %s: %v\n", t.label(), err)
		return nil, exitConnect
	}
	defer tg.Close()
	r, err := p.measure(ctx, tg)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-flow: bench: %s: %v\n", t.label(), err)
		return nil, exitRemote
	}
	r.Name, r.Kind, r.Address = t.label(), t.kind, shownAddr(t)
	return r, exitOK
}

// shownAddr is t's address as logs and output show it: a URL's token
// query redacted.
func shownAddr(t benchTarget) string {
	if t.kind == "stdio" {
		return t.addr
	}
	return shownURL(t.addr)
}

// connect dials t with the plan's Calls.
func (p benchPlan) connect(ctx context.Context, o options, t benchTarget, stderr io.Writer) (workload.Target, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch t.kind {
	case "mcp-flow":
		tlsConf, err := clientTLS(o)
		if err != nil {
			return nil, err
		}
		cfg := flow.ClientConfig{TLSConfig: tlsConf, Encodings: encodings(o.encoding), Token: o.tokenSource(),
			Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), Limits: o.limits()}
		// -webtransport, as for call: draft-02 when asked, or when the
		// server refuses the current dialect as a draft-02 server does
		// (Deno 2.9's, js/src/server.js).
		if o.webtransport == "draft02" {
			cfg.DialSession = draft02.FlowDialer(tlsConf, nil)
		}
		s, err := flow.Dial(dctx, t.addr, cfg)
		if err != nil && o.webtransport == "auto" && draft02.Needed(err) {
			cfg.DialSession = draft02.FlowDialer(tlsConf, nil)
			s, err = flow.Dial(dctx, t.addr, cfg)
		}
		if err != nil {
			return nil, err
		}
		return &workload.Flow{Session: s, LargeCall: p.large, EchoCall: p.echo}, nil
	case "streamable-http":
		// Connections reused, at most 64 a host (as the benchmarks'
		// go-sdk client: an HTTP/1.1 client otherwise opens one for every
		// ping the transfer holds up).
		var rt http.RoundTripper = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, MaxConnsPerHost: 64}
		if src := o.tokenSource(); src != nil {
			rt = bearerTransport{rt, src}
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "mcp-flow-bench", Version: "1"}, nil)
		cs, err := c.Connect(dctx, &mcp.StreamableClientTransport{Endpoint: t.addr, HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: p.opts.revision})
		if err != nil {
			return nil, err
		}
		return &workload.SDK{Session: cs, LargeCall: p.large, EchoCall: p.echo}, nil
	default:
		return dialStdio(dctx, t.addr, p, stderr)
	}
}

// bearerTransport presents the -token-file's token on every request.
type bearerTransport struct {
	http.RoundTripper
	token func(context.Context) (string, error)
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := b.token(r.Context())
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return b.RoundTripper.RoundTrip(r)
}

// stdioTarget is a go-sdk client on a subprocess's pipes; Close ends the
// subprocess (its stdin's EOF, then SIGKILL after 5 s).
type stdioTarget struct {
	*workload.SDK
	cmd   *exec.Cmd
	stdin io.Closer
}

func (t *stdioTarget) Close() {
	t.SDK.Close()
	t.stdin.Close()
	done := make(chan struct{})
	go func() { t.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.cmd.Process.Kill()
		<-done
	}
}

// dialStdio starts the server command line and connects over its pipes.
// Not the go-sdk's CommandTransport: its line reader caps a message at
// 16 MiB and has no setting for it, and a large result is one line.
func dialStdio(ctx context.Context, cmdline string, p benchPlan, stderr io.Writer) (workload.Target, error) {
	f := strings.Fields(cmdline)
	cmd := exec.Command(f[0], f[1:]...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "mcp-flow-bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: -1}, &mcp.ClientSessionOptions{ProtocolVersion: p.opts.revision})
	if err != nil {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	return &stdioTarget{SDK: &workload.SDK{Session: cs, LargeCall: p.large, EchoCall: p.echo}, cmd: cmd, stdin: stdin}, nil
}

// measure runs the workloads on t: a warm-up echo and result, the large
// result (-rounds), echo (-calls at -concurrency), then the open loop idle
// (-idle) and during a large result.
func (p benchPlan) measure(ctx context.Context, t workload.Target) (*benchResult, error) {
	bo := p.opts
	n := int64(bo.size)
	if err := t.Echo(ctx, ""); err != nil {
		return nil, fmt.Errorf("echo (%s): %w", p.echo, err)
	}
	if _, err := workload.Large(ctx, t, min(n, 1<<20)); err != nil {
		return nil, fmt.Errorf("large result (%s): %w", p.large, err)
	}
	r := &benchResult{}
	r.Large.Bytes, r.Large.Rounds = n, bo.rounds
	for i := range bo.rounds {
		d, err := workload.Large(ctx, t, n)
		if err != nil {
			return nil, fmt.Errorf("large result (%s): %w", p.large, err)
		}
		r.Large.MBps = append(r.Large.MBps, float64(n)/d.Seconds()/1e6)
		p.log.Info("bench: large result", "round", i+1, "MB/s", workload.FmtNum(r.Large.MBps[i]))
	}
	r.Large.MedianMBps = medianOf(r.Large.MBps)
	t0 := time.Now()
	l, err := workload.EchoCalls(ctx, t, bo.concurrency, bo.calls)
	if err != nil {
		return nil, fmt.Errorf("echo (%s): %w", p.echo, err)
	}
	el := time.Since(t0)
	r.Echo.Concurrency, r.Echo.Calls = bo.concurrency, bo.calls
	r.Echo.CallsPerSec = float64(len(l)) / el.Seconds() // the calls answered
	sorted := sortedDurations(l)
	r.Echo.P50ms, r.Echo.P99ms = ms(workload.Quantile(sorted, 0.5)), ms(workload.Quantile(sorted, 0.99))
	p.log.Info("bench: echo", "calls/s", workload.FmtNum(r.Echo.CallsPerSec))
	interval := time.Duration(float64(time.Second) / bo.pingRate)
	h, err := workload.HeadOfLine(ctx, t, workload.HOLConfig{Bytes: n, Interval: interval, IdlePings: max(1, int(bo.idle/interval))})
	if err != nil {
		return nil, fmt.Errorf("open-loop ping: %w", err)
	}
	r.Ping.RatePerSec, r.Ping.Bytes = bo.pingRate, n
	r.Ping.Idle, r.Ping.Busy = pingStats(h.Idle), pingStats(h.Busy)
	r.Ping.Busy.StallMs = ms(workload.LongestStall(h.Busy))
	r.Ping.TransferMBps = h.MBps()
	r.Ping.series = workload.Points(h.Busy)
	for _, pt := range r.Ping.series {
		r.Ping.Series = append(r.Ping.Series, [2]float64{pt.At, pt.Lat})
	}
	p.log.Info("bench: open-loop ping", "busy-p99-ms", workload.FmtNum(r.Ping.Busy.P99ms), "pings", r.Ping.Busy.Pings)
	return r, nil
}

// benchReport is -json's output.
type benchReport struct {
	Size     int64          `json:"size"`
	PingRate float64        `json:"ping_rate"`
	Large    string         `json:"large"`
	Echo     string         `json:"echo"`
	Targets  []*benchResult `json:"targets"`
}

// benchResult is one target's figures (milliseconds, MB/s = 10⁶ bytes/s).
type benchResult struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Address string `json:"address"`
	Large   struct {
		Bytes      int64     `json:"bytes"`
		Rounds     int       `json:"rounds"`
		MBps       []float64 `json:"mb_per_s"`
		MedianMBps float64   `json:"median_mb_per_s"`
	} `json:"large"`
	Echo struct {
		Concurrency int     `json:"concurrency"`
		Calls       int     `json:"calls"`
		CallsPerSec float64 `json:"calls_per_s"`
		P50ms       float64 `json:"p50_ms"`
		P99ms       float64 `json:"p99_ms"`
	} `json:"echo"`
	Ping struct {
		RatePerSec   float64 `json:"rate_per_s"`
		Bytes        int64   `json:"bytes"`
		Idle         pingFig `json:"idle"`
		Busy         pingFig `json:"busy"`
		TransferMBps float64 `json:"transfer_mb_per_s"`
		// Series is the busy phase: [scheduled ms, latency ms] a ping.
		Series [][2]float64 `json:"series"`
		series []workload.Point
	} `json:"ping"`
}

// pingFig sums up one phase of the open loop.
type pingFig struct {
	Pings   int     `json:"pings"`
	P50ms   float64 `json:"p50_ms"`
	P99ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
	StallMs float64 `json:"stall_ms,omitempty"`
}

func pingStats(s []workload.Sample) pingFig {
	l := workload.Latencies(s)
	return pingFig{Pings: len(s), P50ms: ms(workload.Quantile(l, 0.5)), P99ms: ms(workload.Quantile(l, 0.99)), MaxMs: ms(workload.Quantile(l, 1))}
}

func printBenchTable(w io.Writer, bo benchOptions, rs []*benchResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "TARGET\tlarge %s MB/s\techo c=%d calls/s\tidle ping p50/p99/max ms\tbusy ping p50/p99/max ms\tbusy pings\tstall ms\n", sizeName(int64(bo.size)), bo.concurrency)
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.Name, workload.FmtNum(r.Large.MedianMBps), workload.FmtNum(r.Echo.CallsPerSec),
			triple(r.Ping.Idle), triple(r.Ping.Busy), r.Ping.Busy.Pings, workload.FmtNum(r.Ping.Busy.StallMs))
	}
	tw.Flush()
	fmt.Fprintf(w, "(large: median of %d; open-loop ping at %g/s, during a %s result; MB/s = 10^6 bytes/s)\n", bo.rounds, bo.pingRate, sizeName(int64(bo.size)))
}

func triple(f pingFig) string {
	return workload.FmtNum(f.P50ms) + " / " + workload.FmtNum(f.P99ms) + " / " + workload.FmtNum(f.MaxMs)
}

func sizeName(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

func sortedDurations(l []time.Duration) []time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	return s
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
