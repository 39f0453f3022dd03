// Package qlogdir writes a qlog of every QUIC connection into the directory
// named by $QLOGDIR, as quic-go's own tools do (qlog.DefaultConnectionTracer,
// http3/qlog): one file per connection, named <odcid>_<client|server>.sqlog
// by the connection's original destination connection ID and its side, in
// JSON-SEQ (RFC 7464) with the QUIC and HTTP/3 event schemas. View the files
// with qvis (https://qvis.quictools.info).
//
// Unlike quic-go's helper it never ends the process or fails a connection:
// a directory it cannot create or a file it cannot open is logged once and
// the connection goes on without a qlog. Header values that carry
// credentials (Authorization, Cookie) are redacted, and so is a token in the
// CONNECT's query (access_token).
//
// It shares no code with flow, so that the conformance judge may use it too.
package qlogdir

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	h3qlog "github.com/quic-go/quic-go/http3/qlog"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

// Env names the environment variable that turns qlog on: the directory the
// files go to. Unset or empty, nothing is written.
const Env = "QLOGDIR"

// Dir is the qlog directory, "" when qlog is off.
func Dir() string { return os.Getenv(Env) }

// Tracer returns the quic.Config.Tracer that writes one qlog file per
// connection into Dir, or nil when $QLOGDIR is unset (so that quic-go records
// nothing). It reads $QLOGDIR when called, not per connection.
func Tracer() func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
	dir := Dir()
	if dir == "" {
		return nil
	}
	return h3qlog.RedactHeaders(func(_ context.Context, isClient bool, odcid quic.ConnectionID) qlogwriter.Trace {
		return open(dir, isClient, odcid)
	}, redact)
}

// TokenQueryParam is the query parameter that carries a bearer token where
// a header cannot (a browser's WebTransport CONNECT; spec §9.1, RFC 6750
// §2.3). It is bearer.QueryParam, written again here: this package shares
// nothing with the implementation, so that the judge may use it.
const TokenQueryParam = "access_token"

// redact hides the values of the header fields that carry credentials
// (names as http.CanonicalHeaderKey gives them, pseudo-header fields as
// ":path"), and a token in the request target's query.
func redact(name, value string) string {
	switch name {
	case "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie":
		return "[redacted]"
	case ":path":
		return redactQuery(value)
	}
	return value
}

// redactQuery returns the request target path with the value of every
// TokenQueryParam in its query replaced by [redacted]; anything it cannot
// parse as a query is redacted whole.
func redactQuery(path string) string {
	p, q, ok := strings.Cut(path, "?")
	if !ok || !strings.Contains(q, TokenQueryParam) {
		return path
	}
	vs, err := url.ParseQuery(q)
	if err != nil {
		return p + "?[redacted]"
	}
	if !vs.Has(TokenQueryParam) {
		return path
	}
	vs.Set(TokenQueryParam, "[redacted]")
	return p + "?" + vs.Encode()
}

// open starts the trace of one connection: the file, its header record, and
// the goroutine that writes its events until the connection and its HTTP/3
// layer are done with it.
func open(dir string, isClient bool, odcid quic.ConnectionID) qlogwriter.Trace {
	side := "server"
	if isClient {
		side = "client"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		warnOnce("qlog off: cannot create "+Env, "dir", dir, "err", err)
		return nil
	}
	path := filepath.Join(dir, fmt.Sprintf("%s_%s.sqlog", odcid, side))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		warnOnce("qlog: cannot create a qlog file; connections go on without one", "file", path, "err", err)
		return nil
	}
	writing.add()
	seq := qlogwriter.NewConnectionFileSeq(&file{Writer: bufio.NewWriter(f), f: f}, isClient, odcid,
		[]string{qlog.EventSchema, h3qlog.EventSchema})
	go seq.Run()
	return seq
}

// file is a buffered qlog file. quic-go closes it when the connection and
// every other producer of its trace (HTTP/3) have finished.
type file struct {
	*bufio.Writer
	f *os.File
}

func (w *file) Close() error {
	defer writing.done()
	err := w.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		warnOnce("qlog: writing a qlog file failed", "file", w.f.Name(), "err", err)
	}
	return err
}

// Announce logs once, at info level, that qlog is on and where, creating the
// directory (as quic-go's helper does); it says nothing when $QLOGDIR is
// unset. Later warnings (a file that cannot be created) go to log too; until
// Announce they go to slog.Default().
func Announce(log *slog.Logger) {
	logger.Store(log)
	dir := Dir()
	if dir == "" {
		return
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		warnOnce("qlog off: cannot create "+Env, "dir", dir, "err", err)
		return
	}
	log.Info("qlog on: one file per QUIC connection, <odcid>_<client|server>.sqlog", "dir", dir)
}

var (
	logger atomic.Pointer[slog.Logger]
	warned atomic.Bool
)

// warnOnce logs the first qlog failure of the process: the next ones have
// the same cause, most likely.
func warnOnce(msg string, args ...any) {
	if warned.Swap(true) {
		return
	}
	log := logger.Load()
	if log == nil {
		log = slog.Default()
	}
	log.Warn(msg, args...)
}

// ExitBound is how long a process waits for its qlog files as it exits
// (Wait): enough for quic-go to finish the traces of connections that have
// closed.
const ExitBound = time.Second

// Wait waits, at most d, until every qlog file opened so far is written and
// closed, and reports whether they were. A process calls it before it exits:
// quic-go finishes a trace after its connection has closed, on a goroutine
// of its own. A connection still open keeps its file open.
func Wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-writing.idle():
		return true
	case <-t.C:
		return false
	}
}

// writing counts the qlog files open.
var writing counter

type counter struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed while n == 0
}

func (c *counter) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.zero = make(chan struct{})
	}
	c.n++
}

func (c *counter) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 {
		close(c.zero)
	}
}

func (c *counter) idle() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return c.zero
}
