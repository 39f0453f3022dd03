package demotools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/tools"
)

// TallyEnv names the file the tally tool appends to when Config.TallyFile is
// empty. The tool exists only when one of them is set: it is a test hook
// (internal/lbtest runs three mcp-flow-server processes with the same file
// and counts how often each call ran, across restarts), never on by default,
// since it writes to the server's disk for whoever can connect.
const TallyEnv = "MCP_FLOW_TEST_TALLY"

// MaxTallyKey bounds a tally key, in bytes: one line of the file, written
// with one write(2) in append mode, so that lines of concurrent writers
// (other sessions, other processes) never interleave.
const MaxTallyKey = 256

// tallyFile is the file of the tally tool, or "" when there is none.
func (cfg Config) tallyFile() string {
	if cfg.TallyFile != "" {
		return cfg.TallyFile
	}
	return os.Getenv(TallyEnv)
}

// tallyTool appends each call's key to path, one line per execution, and
// returns the key as text, as echo does: a side effect that counts
// executions, so that a call run twice (a retry of a request that had in
// fact been executed) shows as two lines.
func tallyTool(path string) tools.Tool {
	var mu sync.Mutex // one writer at a time within the process
	return tools.Tool{
		Name:        "tally",
		Description: "Appends key to the server's tally file (a test hook: executions counted across server processes) and returns key as text.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"key":{"type":"string","minLength":1,"maxLength":%d}},"required":["key"]}`, MaxTallyKey)),
		Func: func(_ context.Context, _ *flow.Request, args json.RawMessage) (*tools.Result, error) {
			var a struct {
				Key string `json:"key"`
			}
			if json.Unmarshal(args, &a) != nil || a.Key == "" || len(a.Key) > MaxTallyKey || strings.ContainsAny(a.Key, "\r\n") {
				return nil, bad(fmt.Sprintf("tally needs {key: string of 1 to %d bytes, one line}", MaxTallyKey))
			}
			mu.Lock()
			defer mu.Unlock()
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return nil, err // a tool error: isError, with the reason
			}
			_, werr := f.Write([]byte(a.Key + "\n"))
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return nil, werr
			}
			return &tools.Result{Content: []any{tools.NewText(a.Key)}}, nil
		},
	}
}
