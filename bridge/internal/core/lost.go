package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// A lost MCP-Flow session as the client sees it (spec §8, §10): the error
// its requests fail with.

// ServerLostError answers the host's requests when the MCP-Flow session
// ended other than by the host's EOF (spec §10): the requests in flight,
// and those that found no new session in time.
type ServerLostError struct {
	URL    string
	Err    error         // why the session ended (or the last reconnection failed)
	Waited time.Duration // how long the request waited for a reconnection
	// NotSent: the request never reached the server (no session came in
	// time, or the front does not reconnect): it did not run and may be
	// retried, so the client gets -32006 (spec §8), not -32603.
	NotSent bool
}

var _ error = (*ServerLostError)(nil)

func (e *ServerLostError) Error() string {
	msg := "MCP-Flow server " + e.URL + " lost"
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if u, ok := e.Err.(*UnreachableError); ok { // a failed dial says it all
		msg = u.Error()
	}
	if e.Waited > 0 {
		msg += fmt.Sprintf(" (no new session within %v)", e.Waited)
	}
	if e.NotSent {
		msg += "; the request was not sent (it did not run: retry it)"
	}
	return msg
}

func (e *ServerLostError) Unwrap() error { return e.Err }

// lostError is the JSON-RPC error for a request that lost its server:
// -32603 for one that was in flight (it may have run), -32006 for one that
// was never sent (spec §8: it did not run; retry on a new session).
func lostError(err error) *jsonrpc.Error {
	e := jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error())
	var le *ServerLostError
	if errors.As(err, &le) {
		if le.NotSent {
			e.Code = jsonrpc.CodeShuttingDown
		}
		why := ""
		if le.Err != nil {
			why = le.Err.Error()
		}
		e.Data, _ = json.Marshal(map[string]string{"server": le.URL, "reason": why})
	}
	return e
}
