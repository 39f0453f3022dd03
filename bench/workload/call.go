package workload

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A Call is a tool and its arguments, as the command line gives them:
// "generate bytes=N" (each value that parses as JSON is taken as JSON, others
// as strings). In a large-result Call the value N stands for the size asked
// for; in an echo Call a text argument is the text echoed.
type Call struct {
	Tool string
	Args map[string]any
}

// Default Calls: the large result and echo of mcp-flow-server's test tools
// (and of the go-sdk and TypeScript SDK fixtures of the benchmarks).
var (
	DefaultLarge = Call{Tool: "generate", Args: map[string]any{"bytes": "N"}}
	DefaultEcho  = Call{Tool: "echo", Args: map[string]any{"text": "hello"}}
)

// ParseCall parses "TOOL [key=value ...]".
func ParseCall(s string) (Call, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return Call{}, fmt.Errorf("no tool in %q", s)
	}
	c := Call{Tool: f[0], Args: map[string]any{}}
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return Call{}, fmt.Errorf("argument %q of %s is not key=value", kv, f[0])
		}
		var j any
		if v != "N" && json.Unmarshal([]byte(v), &j) == nil {
			c.Args[k] = j
		} else {
			c.Args[k] = v
		}
	}
	return c, nil
}

// String is the Call as ParseCall reads it.
func (c Call) String() string {
	s := c.Tool
	for k, v := range c.Args {
		b, _ := json.Marshal(v)
		if str, ok := v.(string); ok {
			b = []byte(str)
		}
		s += " " + k + "=" + string(b)
	}
	return s
}

// params are the tools/call params: N replaced by n; for echo, a "text"
// argument replaced by text (when text is not empty).
func (c Call) params(n int64, text string) map[string]any {
	args := make(map[string]any, len(c.Args))
	for k, v := range c.Args {
		if v == "N" {
			v = n
		}
		if k == "text" && text != "" {
			v = text
		}
		args[k] = v
	}
	return map[string]any{"name": c.Tool, "arguments": args}
}
