package flow

import (
	"context"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
)

// qlogTracer is the quic.Config.Tracer of every connection flow dials or
// accepts: one qlog file per connection under $QLOGDIR, nothing when it is
// unset (package internal/qlogdir).
func qlogTracer() func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
	return qlogdir.Tracer()
}
