// Package bench measures MCP-Flow against the transports a user would pick
// instead (the MCP Go SDK's stdio over real subprocess pipes, and its
// Streamable HTTP over real loopback HTTP) and against the limits of the
// stack (a bare webtransport-go stream, a bare quic-go stream, TCP), in the
// same run, on the same machine. Every figure that matters is reported as a
// ratio to its baseline measured in the same benchmark.
//
//	go test -run='^$' -bench=. ./bench/            # short mode
//	MCP_FLOW_BENCH_FULL=1 go test -run='^$' -bench=. -timeout=60m ./bench/
package bench
