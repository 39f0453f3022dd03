package bridge_test

import "github.com/mcp-flow/mcp-flow/internal/flowtest"

// The upstream's in-process stdio MCP server, for this package's tests that
// need one (TestParseCount).
type pipeMessage = flowtest.PipeMessage

var pipeServer = flowtest.PipeServer
