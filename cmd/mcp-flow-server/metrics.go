package main

// -metrics ADDR: Prometheus metrics (package metrics) at /metrics on a
// plain-HTTP listener of their own, an admin port: never the public one,
// whose TCP side serves Streamable HTTP at -path only. The listener takes
// any address; one that is not loopback exposes the server's counts (no
// tokens, no arguments, no ids) to whoever reaches it.

import (
	"log/slog"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/metrics"
)

// metricsPath is where the -metrics listener serves the metrics.
const metricsPath = metrics.Path

// serveMetrics starts the -metrics listener at addr and returns what
// counts the server's Events, and stop, which closes the listener. The
// listener's URL goes to the log (key "metrics"), never to stdout, whose
// lines scripts parse. With addr "" there is no listener: observe is nil.
func serveMetrics(addr string, log *slog.Logger) (observe func(flow.Event), stop func(), err error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	m := metrics.New()
	at, closeFn, err := m.ListenAndServe(addr, slog.NewLogLogger(log.Handler(), slog.LevelDebug))
	if err != nil {
		return nil, nil, err
	}
	log.Info("serving metrics (an admin listener: keep it off the public network)", "metrics", "http://"+at.String()+metricsPath)
	return m.Observe, func() { closeFn() }, nil
}

// chainObserve returns a hook that calls a, then b; either may be nil.
func chainObserve(a, b func(flow.Event)) func(flow.Event) {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return func(e flow.Event) { a(e); b(e) }
}
