// Package workload is the benchmark suite's measurements, shared by the
// in-repo benchmarks (package bench) and `mcp-flow bench`, so that a figure
// means the same thing wherever it was taken: the large result end to end
// (MB/s of payload), echo tools/call at a fixed concurrency (calls/s), and
// the open-loop ping during a large result (docs/spec.md §6: the control
// plane beside an execution stream), each ping timed from its scheduled send
// time so that a stalled peer counts every ping it holds up (no coordinated
// omission).
//
// A Target is one client session to a server: Flow (MCP-Flow, package flow)
// or SDK (a go-sdk client session over Streamable HTTP or stdio). The tools
// they call are given as a Call ("generate bytes=N", "echo text=hello").
package workload
