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
// which waiting for a core does not inflate. BenchmarkSessions takes a burst of 1,000 dials and
// holds thousands of idle sessions in a server process, measuring its heap
// alone. `make bench` turns one run into docs/BENCHMARKS.md
// (cmd/benchreport).
//
//	go test -run='^$' -bench=. ./bench/            # short mode
//	MCP_FLOW_BENCH_FULL=1 go test -run='^$' -bench=. -timeout=60m ./bench/
package bench
