package bench

import "github.com/mcp-flow/mcp-flow/bench/workload"

// ioCopyDiscard reads as the workload's targets do.
var ioCopyDiscard = workload.CopyDiscard
