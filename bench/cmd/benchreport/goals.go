package main

import (
	"fmt"
	"strings"
)

// goal is one of the goals: a ratio of two measurements, or (den
// empty) one measurement against a bound. A name ending in "*" stands for
// the best (largest) of the results it prefixes: a baseline at its best
// write size. A ceiling is a bound the goal cannot pass by construction: it
// is reported, never listed as missed. A reported goal is a figure the
// machine or upstream decides (bench/doc.go): it is shown beside its bare
// webtransport-go equivalent measured in the same run (bare), never listed
// as missed.
type goal struct {
	what      string
	num, den  [2]string // benchmark, unit
	cmp       string    // ">=" or "<="
	threshold float64
	scale     float64 // the value is multiplied by it (0: 1)
	ceiling   bool
	reported  bool
	bare      [2][2]string // num and den of the bare equivalent (den empty: none)
}

const (
	hol      = "BenchmarkHeadOfLine/flow-cbor"
	holBare  = "BenchmarkHeadOfLine/bare-webtransport"
	holProc  = "BenchmarkHeadOfLineProcesses/flow-cbor"
	holProcW = "BenchmarkHeadOfLineProcesses/flow-cbor-window-64k"
	shaped   = "BenchmarkShapedLink/flow-cbor"
	shapedW  = "BenchmarkShapedLink/flow-cbor-window-*"
	// shapedSDK is the go-sdk's Streamable HTTP on the same link, and
	// lossy* the second profile (50 ms, 20 Mbit/s, 1 % loss).
	shapedSDK = "BenchmarkShapedLink/sdk-http"
	lossyFlow = "BenchmarkShapedLink/flow-cbor-50ms-20mbit-loss1"
	lossySDK  = "BenchmarkShapedLink/sdk-http-50ms-20mbit-loss1"
	sessions  = "BenchmarkSessions"
	// streamVsBare compares the execution stream with the bare stream.
	streamVsBare = "BenchmarkStreamVsBare"
	// echoInterleaved compares the encodings in turns, on one machine load.
	echoInterleaved = "BenchmarkEcho/flow-interleaved/c=16"
	// firstResult pairs each fallback dial on a blocked network with one
	// of Streamable HTTP alone (issue 26).
	firstResult = "BenchmarkFirstResult/fallback-blocked"
	// sdkEcho and sdkLarge compare the go-sdk's transports in turns, a
	// go-sdk client and server at both ends (issue 38).
	sdkEcho  = "BenchmarkGoSDKTransport/echo/c=16"
	sdkLarge = "BenchmarkGoSDKTransport/large/16MiB"
)

var goals = []goal{
	{what: "execution stream vs bare webtransport-go stream at its best write size (64 MiB, medians of interleaved rounds)", num: [2]string{streamVsBare, "flow/bare"}, cmp: ">=", threshold: 0.9},
	{what: "browser: the official TypeScript SDK over the js/ transport vs a bare WebTransport stream, Chromium (medians of interleaved rounds)", num: [2]string{"BenchmarkBrowserThroughput/chromium", "sdk/bare"}, cmp: ">=", threshold: 0.8},
	{what: "browser: the official TypeScript SDK over the js/ transport vs a bare WebTransport stream, Firefox (medians of interleaved rounds)", num: [2]string{"BenchmarkBrowserThroughput/firefox", "sdk/bare"}, cmp: ">=", threshold: 0.8},
	{what: "large result vs go-sdk stdio, base64 (256 MiB, MB/s)", num: [2]string{"BenchmarkLarge/flow-cbor/256MiB", "MB/s"}, den: [2]string{"BenchmarkLarge/sdk-stdio/256MiB", "MB/s"}, cmp: ">=", threshold: 10},
	{what: "large result vs go-sdk Streamable HTTP, base64 (256 MiB, MB/s)", num: [2]string{"BenchmarkLarge/flow-cbor/256MiB", "MB/s"}, den: [2]string{"BenchmarkLarge/sdk-http/256MiB", "MB/s"}, cmp: ">=", threshold: 10},
	{what: "peak RSS, 256 MiB vs 16 MiB result, MCP-Flow (bounded: ≈1)", num: [2]string{"BenchmarkLarge/flow-cbor/256MiB", "peak-RSS-MiB"}, den: [2]string{"BenchmarkLarge/flow-cbor/16MiB", "peak-RSS-MiB"}, cmp: "<=", threshold: 1.5},
	{what: "open-loop ping p99 during a 256 MiB result vs idle p99, separate processes, one core each", num: [2]string{holProc, "busy-p99-µs"}, den: [2]string{holProc, "idle-p99-µs"}, cmp: "<=", threshold: 3},
	{what: "open-loop ping max during a 256 MiB result, separate processes, one core each (ms)", num: [2]string{holProc, "busy-max-µs"}, cmp: "<=", threshold: 10, scale: 1e-3},
	{what: "the same two with a 64 KiB stream receive window: p99 busy/idle", num: [2]string{holProcW, "busy-p99-µs"}, den: [2]string{holProcW, "idle-p99-µs"}, cmp: "<=", threshold: 3},
	{what: "the same with a 64 KiB stream receive window: max (ms)", num: [2]string{holProcW, "busy-max-µs"}, cmp: "<=", threshold: 10, scale: 1e-3},
	{what: "open-loop ping p99 during a 256 MiB result vs idle p99, one process (reported: the Go scheduler both ends share decides it; judged in separate processes above)", num: [2]string{hol, "busy-p99-µs"}, den: [2]string{hol, "idle-p99-µs"}, cmp: "<=", threshold: 3,
		reported: true, bare: [2][2]string{{holBare, "busy-p99-µs"}, {holBare, "idle-p99-µs"}}},
	{what: "open-loop ping max during a 256 MiB result, one process (ms; reported, as above)", num: [2]string{hol, "busy-max-µs"}, cmp: "<=", threshold: 10, scale: 1e-3,
		reported: true, bare: [2][2]string{{holBare, "busy-max-µs"}}},
	{what: "shaped link: ping p99 during a 64 MiB result vs idle p99, MCP-Flow", num: [2]string{shaped, "busy-p99-µs"}, den: [2]string{shaped, "idle-p99-µs"}, cmp: "<=", threshold: 2},
	{what: "shaped link: throughput vs link rate, MCP-Flow", num: [2]string{shaped, "link-%"}, cmp: ">=", threshold: 0.9, scale: 0.01},
	{what: "shaped link: ping p99 during the result, MCP-Flow's defaults vs go-sdk Streamable HTTP in the same run", num: [2]string{shaped, "busy-p99-µs"}, den: [2]string{shapedSDK, "busy-p99-µs"}, cmp: "<=", threshold: 1},
	{what: "shaped link 50 ms, 20 Mbit/s, 1 % loss: ping p99 during a 16 MiB result vs idle p99, MCP-Flow", num: [2]string{lossyFlow, "busy-p99-µs"}, den: [2]string{lossyFlow, "idle-p99-µs"}, cmp: "<=", threshold: 2},
	{what: "shaped link 50 ms, 20 Mbit/s, 1 % loss: ping p99 during the result, MCP-Flow vs go-sdk Streamable HTTP (reported, not judged: the TCP relay relays bytes and cannot lose packets, so the go-sdk's row has no loss; this kernel has no netem to give both the same)", num: [2]string{lossyFlow, "busy-p99-µs"}, den: [2]string{lossySDK, "busy-p99-µs"}, cmp: "<=", threshold: 1, reported: true},
	{what: "shaped link 50 ms, 20 Mbit/s, 1 % loss: throughput vs link rate, MCP-Flow (a ceiling: loss-based congestion control (quic-go's Cubic) under 1 % random loss is bounded near MSS/RTT·1.22/√p ≈ 2.5–3 Mbit/s, 12–15 % of the link (Mathis et al.), whatever the sender paces; docs/design.md)", num: [2]string{lossyFlow, "link-%"}, cmp: ">=", threshold: 0.9, scale: 0.01, ceiling: true},
	{what: "shaped link, stream receive window 2 BDP: ping p99 busy/idle", num: [2]string{shapedW, "busy-p99-µs"}, den: [2]string{shapedW, "idle-p99-µs"}, cmp: "<=", threshold: 2},
	{what: "shaped link, stream receive window 2 BDP: throughput vs link rate", num: [2]string{shapedW, "link-%"}, cmp: ">=", threshold: 0.9, scale: 0.01},
	{what: "idle sessions held by the server process vs asked (10,000 in full mode)", num: [2]string{sessions, "sessions"}, den: [2]string{sessions, "sessions-asked"}, cmp: ">=", threshold: 1},
	{what: "heap per idle session, server process alone (KiB; reported: quic-go, crypto/tls and webtransport-go hold most of it)", num: [2]string{sessions, "KiB-heap/session"}, cmp: "<=", threshold: 64,
		reported: true, bare: [2][2]string{{sessions, "KiB-heap/bare-stream-session"}}},
	{what: "MCP-Flow's own share of an idle session: its live heap per session (after GC) minus that of a bare webtransport-go session holding one bidirectional stream read at both ends, each held by a server process of its own in the same run (KiB; live, not heap in use: free space in spans is the allocator's, not held by either; the difference, not the profile's attribution to MCP-Flow's code, which misses what MCP-Flow makes the stack and the runtime hold: bench/doc.go)", num: [2]string{sessions, "KiB-own-live/session"}, cmp: "<=", threshold: 8},
	{what: "heap per idle session vs a bare webtransport-go session's holding one bidirectional stream, same run", num: [2]string{sessions, "KiB-heap/session"}, den: [2]string{sessions, "KiB-heap/bare-stream-session"}, cmp: "<=", threshold: 1.1},
	{what: "burst of 1,000 concurrent dials + initialize: dials refused or failed", num: [2]string{sessions, "burst-refused"}, cmp: "<=", threshold: 0},
	{what: "time to the first result (dial, initialize, one echo) on a network that drops UDP, through the fallback minus Streamable HTTP alone (ms, median of interleaved pairs)", num: [2]string{firstResult, "over-http-p50-ms"}, cmp: "<=", threshold: 1000},
	{what: "the same, the largest difference of a pair (ms)", num: [2]string{firstResult, "over-http-max-ms"}, cmp: "<=", threshold: 1000},
	{what: "a go-sdk client to a go-sdk server, echo calls/s at concurrency 16: MCP-Flow as the go-sdk's transport (bridge/sdkflow) vs the pipe adapter it replaced (medians of interleaved rounds)", num: [2]string{sdkEcho, "sdkflow/pipe"}, cmp: ">=", threshold: 1.5},
	{what: "a go-sdk client to a go-sdk server, large result (16 MiB), raw: the tool's bytes on an execution stream as they are (sdkflow.StreamResult) read by the client through sdkflow.OpenStream (ClientTransport.KeepStreams), vs go-sdk Streamable HTTP (medians of interleaved rounds)", num: [2]string{sdkLarge, "sdkflow-raw/sdk-http"}, cmp: ">=", threshold: 10},
	{what: "the same result as the go-sdk's CallToolResult API has it, base64 in its JSON at both ends (an ImageContent, inline at the client): bridge/sdkflow vs go-sdk Streamable HTTP (reported: the go-sdk's own JSON bounds it, below)", num: [2]string{sdkLarge, "sdkflow/sdk-http"}, cmp: ">=", threshold: 10, reported: true},
	{what: "the same with no transport at all, the go-sdk's own JSON at both ends that every transport of it pays, vs go-sdk Streamable HTTP: the most any go-sdk transport can reach with base64 content (reported)", num: [2]string{sdkLarge, "sdk-direct/sdk-http"}, cmp: ">=", threshold: 10, reported: true},
	{what: "echo calls/s at concurrency 16 vs go-sdk stdio", num: [2]string{"BenchmarkEcho/flow-cbor/c=16", "calls/s"}, den: [2]string{"BenchmarkEcho/sdk-stdio/c=16", "calls/s"}, cmp: ">=", threshold: 2},
	{what: "echo calls/s at concurrency 16 vs go-sdk Streamable HTTP", num: [2]string{"BenchmarkEcho/flow-cbor/c=16", "calls/s"}, den: [2]string{"BenchmarkEcho/sdk-http/c=16", "calls/s"}, cmp: ">=", threshold: 2},
	{what: "large result vs TypeScript SDK stdio, base64 (256 MiB, MB/s)", num: [2]string{"BenchmarkLarge/flow-cbor/256MiB", "MB/s"}, den: [2]string{"BenchmarkLarge/ts-sdk-stdio/256MiB", "MB/s"}, cmp: ">=", threshold: 10},
	{what: "large result vs TypeScript SDK Streamable HTTP, base64 (256 MiB, MB/s)", num: [2]string{"BenchmarkLarge/flow-cbor/256MiB", "MB/s"}, den: [2]string{"BenchmarkLarge/ts-sdk-http/256MiB", "MB/s"}, cmp: ">=", threshold: 10},
	{what: "echo calls/s at concurrency 16 vs TypeScript SDK stdio", num: [2]string{"BenchmarkEcho/flow-cbor/c=16", "calls/s"}, den: [2]string{"BenchmarkEcho/ts-sdk-stdio/c=16", "calls/s"}, cmp: ">=", threshold: 2},
	{what: "echo calls/s at concurrency 16 vs TypeScript SDK Streamable HTTP", num: [2]string{"BenchmarkEcho/flow-cbor/c=16", "calls/s"}, den: [2]string{"BenchmarkEcho/ts-sdk-http/c=16", "calls/s"}, cmp: ">=", threshold: 2},
	{what: "busy ping p99, TypeScript SDK stdio (64 MiB) / MCP-Flow (256 MiB), open loop, one process", num: [2]string{"BenchmarkHeadOfLine/ts-sdk-stdio", "busy-p99-µs"}, den: [2]string{hol, "busy-p99-µs"}, cmp: ">=", threshold: 10},
	{what: "busy ping p99, TypeScript SDK Streamable HTTP (64 MiB) / MCP-Flow (256 MiB), open loop, one process", num: [2]string{"BenchmarkHeadOfLine/ts-sdk-http", "busy-p99-µs"}, den: [2]string{hol, "busy-p99-µs"}, cmp: ">=", threshold: 10},
	{what: "echo calls/s at concurrency 16, cbor vs json (medians of interleaved rounds)", num: [2]string{echoInterleaved, "cbor/json"}, cmp: ">=", threshold: 1},
	{what: "echo calls/s at concurrency 16, protobuf vs json (medians of interleaved rounds)", num: [2]string{echoInterleaved, "protobuf/json"}, cmp: ">=", threshold: 0.9},
	{what: "CBOR encode of the 50-tool list (µs of the process's CPU time: a loaded machine adds its waits for a core to ns/op)", num: [2]string{"BenchmarkEncode/tools_list_result_50/cbor", "cpu-ns/op"}, cmp: "<=", threshold: 50, scale: 1e-3},
	{what: "idle ping p50 vs bare webtransport-go ping-pong (median of interleaved rounds)", num: [2]string{"BenchmarkPing/flow-cbor-vs-bare-webtransport", "flow/bare"}, cmp: "<=", threshold: 1.25},
	{what: "CBOR vs JSON size, tools/call result with a 1 MiB image (a ceiling: base64 makes JSON 4/3 of the bytes, so 0.75 is the limit for an all-payload message)", num: [2]string{"BenchmarkDecode/tools_call_result_image_1MiB/cbor", "bytes/msg"}, den: [2]string{"BenchmarkDecode/tools_call_result_image_1MiB/json", "bytes/msg"}, cmp: "<=", threshold: 0.75, ceiling: true},
	{what: "CBOR vs JSON decode time, tools/call result with a 1 MiB image (the process's CPU time per decode, the collector's included: samples taken seconds apart on a loaded machine compare its load in ns/op)", num: [2]string{"BenchmarkDecode/tools_call_result_image_1MiB/cbor", "cpu-ns/op"}, den: [2]string{"BenchmarkDecode/tools_call_result_image_1MiB/json", "cpu-ns/op"}, cmp: "<=", threshold: 1},
}

type ratio struct {
	goal
	value float64
	ok    bool
	found bool
	base  string // the result a "*" baseline resolved to
	// bareValue is the bare equivalent's figure (bareFound: measured).
	bareValue float64
	bareFound bool
}

// lookup resolves one side of a goal.
func (r *report) lookup(side [2]string) (float64, string, bool) {
	if p, ok := strings.CutSuffix(side[0], "*"); ok {
		return r.best(p, side[1])
	}
	v, ok := r.get(side[0], side[1])
	return v, side[0], ok
}

func (r *report) ratios() []ratio {
	var out []ratio
	for _, g := range goals {
		n, _, ok := r.lookup(g.num)
		rt := ratio{goal: g, found: ok}
		if g.den[0] != "" {
			d, base, ok2 := r.lookup(g.den)
			rt.found = ok && ok2 && d != 0
			rt.base = base
			if rt.found {
				n /= d
			}
		}
		if g.scale != 0 {
			n *= g.scale
		}
		rt.bareValue, rt.bareFound = r.bareOf(g)
		if rt.found {
			rt.value = n
			rt.ok = (g.cmp == ">=" && rt.value >= g.threshold) || (g.cmp == "<=" && rt.value <= g.threshold)
		}
		out = append(out, rt)
	}
	return out
}

// verdict is the table's word for r.
func (r ratio) verdict() string {
	switch {
	case !r.found:
		return "not measured"
	case r.ceiling:
		return "ceiling"
	case r.reported:
		return "reported"
	case r.ok:
		return "met"
	}
	return "MISSED"
}

func (r ratio) line() string {
	if !r.found {
		return fmt.Sprintf("%-100s not measured", r.what)
	}
	return fmt.Sprintf("%-100s %10.4g  (goal %s %g: %s)%s", r.what, r.value, r.cmp, r.threshold, r.verdict(), r.besideBare())
}

// bareOf computes g's bare equivalent, scaled as g is.
func (r *report) bareOf(g goal) (float64, bool) {
	if g.bare[0][0] == "" {
		return 0, false
	}
	v, _, ok := r.lookup(g.bare[0])
	if g.bare[1][0] != "" {
		d, _, ok2 := r.lookup(g.bare[1])
		if ok = ok && ok2 && d != 0; ok {
			v /= d
		}
	}
	if g.scale != 0 {
		v *= g.scale
	}
	return v, ok
}

// besideBare is the bare equivalent's figure, to follow r's.
func (r ratio) besideBare() string {
	if !r.bareFound {
		return ""
	}
	return fmt.Sprintf(" (bare webtransport-go: %.4g)", r.bareValue)
}
