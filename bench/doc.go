// Package bench measures MCP-Flow against the transports a user would pick
// instead (the MCP Go SDK's stdio over real subprocess pipes, and its
// Streamable HTTP over real loopback HTTP; the same two of the official
// TypeScript SDK v2, bench/tsserver on interop/node's Node 22: the rows
// ts-sdk-stdio and ts-sdk-http) and against the limits of the
// stack (a bare webtransport-go stream, a bare quic-go stream, TCP), in the
// same run, on the same machine. Every figure that matters is reported as a
// ratio to its baseline measured in the same benchmark.
//
// The workloads (the large result, echo at a concurrency, the open-loop
// ping) are package bench/workload's, which `mcp-flow bench` runs against
// any server, so that its figures and these mean the same thing.
//
// Head-of-line latency is measured open loop (a ping every 2 ms, each
// timed from its scheduled send time): in one process
// (BenchmarkHeadOfLine), with client and server in two processes pinned
// one core each (BenchmarkHeadOfLineProcesses: the test binary re-runs
// itself in a role, see TestMain; its flow-cbor-gomaxprocs-2 runs both
// processes with GOMAXPROCS=2 on their one core each, to tell Go's wait
// for its one P from the kernel's scheduling), and through a shaped link
// (BenchmarkShapedLink: internal/lossrelay's bottleneck model, UDP for
// MCP-Flow and TCP for the go-sdk's Streamable HTTP, in a relay process of
// its own, the "relay" role). All three account
// for their slowest 1 % of pings with what the run measures: in one
// process (flow-cbor and its window variants), the client's UDP receive
// queue and the process's threads' run delay, sampled from within; in two
// processes, the same for each process (probe_test.go, sched_test.go;
// MCP_FLOW_BENCH_TRACE_DIR also writes a Go execution trace of each role,
// each of the client's pings a trace task "ping"); both report how long
// the measuring process's goroutines waited for a P (runtime/metrics);
// through the shaped link, the relay's record of every datagram (queue
// wait, the relay's own lateness, drops). BenchmarkStreamVsBare
// compares the execution stream with the bare stream at its best write size
// in back-to-back pairs; the goals that compare two samples (the encodings'
// echo calls/s, the idle ping against the bare stream's) take them in
// interleaved rounds too, and the codec goals read CPU time per operation,
// which waiting for a core does not inflate. BenchmarkBrowserThroughput
// reads the same bytes in headless Chromium and Firefox, in interleaved
// rounds, from a bare webtransport-go stream and through the official
// TypeScript SDK over the npm package's transport (js/test/throughput.js),
// against the browser's own limit. BenchmarkSessions takes a burst of 1,000 dials and
// holds thousands of idle sessions in a server process, measuring its heap
// alone. BenchmarkGoSDKTransport puts a go-sdk client and a
// go-sdk server at both ends of MCP-Flow as the go-sdk's transport
// (bridge/sdkflow), of the pipe adapter it replaced, of the go-sdk's
// Streamable HTTP and of no transport at all (the go-sdk's own cost), in
// interleaved rounds. `make bench` turns one run into docs/BENCHMARKS.md
// (cmd/benchreport).
//
// Two figures are reported beside their bare webtransport-go equivalents,
// measured in the same run, rather than judged against a bound, because
// the machine or upstream decides them, not MCP-Flow. In one process
// (BenchmarkHeadOfLine), client and server share one Go scheduler: a
// ping's answer waits for a P that the bulk transfer's goroutines, at
// either end, hold, so the busy tail is the scheduler's and the core's,
// and the bare peer (bare-webtransport: the bulk on one stream of a
// webtransport-go session, 64-byte pings echoed on another, the same open
// loop) shows what the stack alone gets there; the protocol is judged in
// two processes (BenchmarkHeadOfLineProcesses). The heap of an idle
// session is mostly quic-go's connection, crypto/tls's keys and
// webtransport-go's session, so BenchmarkSessions also holds the same
// number of bare webtransport-go sessions (the "bareserver" role: a
// webtransport.Server that accepts sessions and holds them, with the QUIC
// settings MCP-Flow gives an idle session) in a server process of its
// own, measured the same way, first bare (KiB-heap/bare-nostream-session,
// reported) and then each holding one bidirectional stream that the
// client opened and wrote a byte on, echoed, with a goroutine at each end
// blocked in Read on it (KiB-heap/bare-stream-session): the least that any
// protocol with a control stream on WebTransport holds, and what an idle
// MCP-Flow session holds its control stream with, so the fair equivalent.
// What is judged is MCP-Flow's own share, KiB-own-live/session: its live
// heap per session (HeapAlloc after GC) minus the bare session's with a
// stream. Live, because heap in use adds the free space inside the spans
// that live objects keep, which is the allocator's packing of whatever
// the process allocated and freed, held by neither side, and moved the
// heap-in-use difference by ±3 KiB from run to run. The difference,
// because it counts all that MCP-Flow makes the process hold beyond the
// bare session, whoever allocated it: its own objects, and also its
// goroutines' records (runtime.malg) and the stack state they wait with
// (webtransport-go's waiters for the uni-stream and extra-stream accepts
// and for datagrams), which the heap profile puts under the runtime,
// webtransport-go and quic-go. The profile's attribution to MCP-Flow's
// code (the nearest library frame a package of module
// github.com/mcp-flow/mcp-flow, from profiles before and after the
// sessions, sampled every 4 KiB) is reported beside it,
// KiB-own-profile/session: a lower bound, and sampled. The total is
// judged against the bare session's with a stream, in heap in use, as
// the issue asks.
//
//	go test -run='^$' -bench=. ./bench/            # short mode
//	MCP_FLOW_BENCH_FULL=1 go test -run='^$' -bench=. -timeout=60m ./bench/
package bench
