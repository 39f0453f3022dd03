package flow

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// lazyAttr is a server session's log handler: its server's handler with
// one attribute added (the peer's address), as slog.Logger.With would
// give, except that the handler with the attribute is built the first
// time the session logs, not when the session is made: most sessions
// never log, and an idle one then holds no handler of its own (bench's
// BenchmarkSessions counts every byte an idle session holds).
type lazyAttr struct {
	base  slog.Handler
	attr  slog.Attr
	built atomic.Pointer[slog.Handler]
}

func newLazyAttr(base slog.Handler, a slog.Attr) *lazyAttr { return &lazyAttr{base: base, attr: a} }

// handler returns the base handler with the attribute, building it once
// (two goroutines may both build it; one is kept).
func (h *lazyAttr) handler() slog.Handler {
	if p := h.built.Load(); p != nil {
		return *p
	}
	w := h.base.WithAttrs([]slog.Attr{h.attr})
	h.built.CompareAndSwap(nil, &w)
	return *h.built.Load()
}

// Enabled is the base handler's: an attribute does not change the level,
// and asking must not build the handler (the session asks before every
// debug event, observe.go).
func (h *lazyAttr) Enabled(ctx context.Context, l slog.Level) bool { return h.base.Enabled(ctx, l) }

func (h *lazyAttr) Handle(ctx context.Context, r slog.Record) error {
	return h.handler().Handle(ctx, r)
}

func (h *lazyAttr) WithAttrs(as []slog.Attr) slog.Handler { return h.handler().WithAttrs(as) }

func (h *lazyAttr) WithGroup(name string) slog.Handler { return h.handler().WithGroup(name) }
