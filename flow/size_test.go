package flow

import (
	"bytes"
	"log/slog"
	"testing"
	"unsafe"
)

// TestSessionSize: a Session fits the runtime's 768-byte size class, so
// that every idle session's struct takes 768 bytes of heap, not 896 (the
// next class): bench's BenchmarkSessions counts what an idle session
// holds. A field added past 768 fails here; reorder the fields (bools
// beside bools, 4-byte atomics in pairs) or move rarely used state behind
// a pointer.
func TestSessionSize(t *testing.T) {
	if n := unsafe.Sizeof(Session{}); n > 768 {
		t.Errorf("Session is %d bytes, over the 768-byte size class", n)
	}
}

// TestLazyAttrLogger: a server session's logger writes what
// slog.Logger.With would, builds its handler only when it first logs
// (an idle session holds none), and derived loggers keep the attribute.
func TestLazyAttrLogger(t *testing.T) {
	var want, got bytes.Buffer
	opts := &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	lw := slog.New(slog.NewTextHandler(&want, opts)).With("remote", "127.0.0.1:4433")
	h := newLazyAttr(slog.NewTextHandler(&got, opts), slog.String("remote", "127.0.0.1:4433"))
	lg := slog.New(h)
	if !lg.Enabled(t.Context(), slog.LevelDebug) || h.built.Load() != nil {
		t.Fatal("asking whether debug is enabled built the handler")
	}
	for _, l := range []*slog.Logger{lw, lg} {
		l.Debug("session ready", "encoding", "cbor")
		l.WithGroup("g").With("k", 1).Warn("w", "x", 2)
	}
	if h.built.Load() == nil {
		t.Error("logging did not build the handler")
	}
	if got.String() != want.String() {
		t.Errorf("lazy logger wrote\n%s\nWith wrote\n%s", &got, &want)
	}
}
