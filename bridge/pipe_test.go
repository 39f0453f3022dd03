package bridge_test

import "github.com/mcp-flow/mcp-flow/internal/flowtest"

// The upstream's in-process stdio MCP servers, for this package's tests
// that need one (TestParseCost, TestParseKeepsOrder).
type pipeMessage = flowtest.PipeMessage

var (
	pipeServer   = flowtest.PipeServer
	pipeSessions = flowtest.PipeSessions
)
