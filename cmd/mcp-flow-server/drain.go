package main

import (
	"errors"

	"github.com/mcp-flow/mcp-flow/flow"
)

// drainFailures splits the error of Server.Shutdown into the sessions whose
// clients had gone (the connection lost, spec §8.2 code 7, or closed by the
// client during the drain), which nobody could drain, and the rest, which
// are this server's failures (a drain past -drain, an internal error).
func drainFailures(err error) (gone int, failed error) {
	if err == nil {
		return 0, nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var errs []error
		for _, e := range j.Unwrap() {
			g, f := drainFailures(e)
			gone += g
			if f != nil {
				errs = append(errs, f)
			}
		}
		return gone, errors.Join(errs...)
	}
	var se *flow.SessionError
	if errors.As(err, &se) && (se.Code == flow.CloseConnectionLost || se.Remote) {
		return 1, nil
	}
	return 0, err
}
