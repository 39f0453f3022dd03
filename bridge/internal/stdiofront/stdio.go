package stdiofront

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
	"github.com/mcp-flow/mcp-flow/bridge/plainio"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
)

// The stdio front (spec §10): the host's stdin and stdout, framed as the
// host frames them (plainio), queued toward the host
// (outbox.go); streams past the inline limit go to files.

// Stdio is the stdio front (spec §10): a core that reads the host's
// messages from stdin and writes its answers to stdout, in the framing the
// host uses. Run it once.
type Stdio struct {
	core    *core.Core
	log     *slog.Logger
	files   *streamFiles
	out     *outbox
	framing atomic.Int32
}

var _ core.Front = hostFront{}

// NewStdio returns a stdio front.
func NewStdio(cfg core.StdioConfig) *Stdio {
	cfg = core.WithDefaults(cfg)
	b := &Stdio{log: cfg.Logger, files: &streamFiles{dir: cfg.StreamDir}, out: newOutbox(cfg.HostQueue, cfg.Logger)}
	b.core = core.New(cfg, hostFront{b}, nil)
	if cfg.ExitIfUnreachable {
		b.core.GiveUpIfUnreachable()
	}
	return b
}

// Run serves the host on in and out until in ends; then it lets the work in
// flight finish, shuts the MCP-Flow session down and returns nil. Only
// protocol messages are written to out. When the MCP-Flow session ends
// otherwise, the front reconnects (spec §10); with ExitOnDisconnect, Run
// returns a *ServerLostError instead, and the goroutine reading in ends
// when in does. With ExitIfUnreachable, a first dial that fails for good
// is answered to the host and returned as an *UnreachableError.
func (b *Stdio) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	c := b.core
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		b.out.run(out)
	}()
	defer func() { // everything queued is written before Run returns
		b.out.close()
		<-wrote
		if err := b.files.remove(); err != nil {
			b.log.Warn("removing the stream files", "err", err)
		}
	}()
	type read struct {
		msg     []byte
		framing plainio.Framing
		err     error
	}
	reads := make(chan read)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		r := plainio.NewFrameReader(in, plainio.MaxMessage)
		for {
			msg, framing, err := r.Read()
			select {
			case reads <- read{msg, framing, err}:
			case <-quit:
				return
			}
			var fe *plainio.FramingError
			if err != nil && !errors.As(err, &fe) {
				return
			}
		}
	}()
	for {
		var rd read
		select {
		case rd = <-reads:
		case err := <-c.Lost():
			// ExitOnDisconnect: the requests in flight fail at once (their
			// session is over); then Run ends.
			c.Stop()
			if u, ok := err.(*core.UnreachableError); ok {
				// ExitIfUnreachable: the host reads why before the bridge
				// goes (one that sees the pipe close first may report only
				// that), and closes the input then; its requests meanwhile
				// (the go-sdk falls back from server/discover to
				// initialize) get the same answer. unreachableGrace at most.
				t := time.NewTimer(unreachableGrace)
				defer t.Stop()
				for wait := true; wait; {
					select {
					case rd := <-reads:
						var fe *plainio.FramingError
						if wait = rd.err == nil || errors.As(rd.err, &fe); rd.err == nil {
							b.framing.Store(int32(rd.framing))
							b.refuseAll(rd.msg, u)
						}
					case <-t.C:
						wait = false
					}
				}
			}
			return err
		}
		msg, framing, err := rd.msg, rd.framing, rd.err
		var fe *plainio.FramingError
		switch {
		case errors.As(err, &fe):
			b.log.Warn("unreadable message", "err", fe)
			c.ParseError(fe)
			continue
		case err == io.EOF:
			return c.Finish()
		case err != nil:
			c.Finish()
			return err
		}
		// Answer in the framing the host uses.
		b.framing.Store(int32(framing))
		p, err := core.DecodeJSON(msg)
		if err != nil {
			c.ParseError(err)
			continue
		}
		c.Receive(ctx, p)
	}
}

// unreachableGrace bounds how long Run, giving up on a server it cannot
// reach (ExitIfUnreachable), waits for the host to close its input once
// the host has the answer that says why.
const unreachableGrace = 2 * time.Second

// refuseAll answers each request in msg with u, the reason the front gave
// up on its server.
func (b *Stdio) refuseAll(msg []byte, u *core.UnreachableError) {
	p, err := core.DecodeJSON(msg)
	if err != nil {
		return
	}
	msgs, _ := jsonrpc.Validate(p)
	for _, m := range msgs {
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			b.emit(jsonrpc.NewErrorResponse(r.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, u.Error())))
		}
	}
}

// hostFront is the Stdio as its core's Front: the core's messages go to
// the host's queue, its large streams to files.
type hostFront struct{ b *Stdio }

func (f hostFront) Emit(m jsonrpc.Message)           { f.b.emit(m) }
func (f hostFront) EmitBatch(rs []*jsonrpc.Response) { f.b.emitBatch(rs) }
func (f hostFront) EmitResult(id jsonrpc.ID, result *mcpjson.Splice) {
	f.b.emitResult(id, result)
}
func (f hostFront) Offload(ctx context.Context, name, mime string, r io.Reader) (string, int64, error) {
	return f.b.offload(ctx, name, mime, r)
}

// emit queues one message for the host: a notification is dropped when the
// queue is full, anything else waits for room (outbox).
func (b *Stdio) emit(m jsonrpc.Message) {
	if r, ok := m.(*jsonrpc.Response); ok && r.Error == nil && len(r.Result) > 0 {
		b.emitResult(r.ID, mcpjson.NewSplice(r.Result))
		return
	}
	req, ok := m.(*jsonrpc.Request)
	b.put(jsonrpc.AppendJSON(nil, m), ok && !req.IsCall())
}

// emitResult queues the response to the host's request id. Its result is
// written once, straight into the framed message (spec §10: a result with
// execution streams is spliced there).
func (b *Stdio) emitResult(id jsonrpc.ID, result *mcpjson.Splice) {
	f := plainio.Framing(b.framing.Load())
	n := core.ResultLen(id, result)
	msg := plainio.AppendFrameHead(make([]byte, 0, n+plainio.FrameOverhead), f, n)
	msg = plainio.AppendFrameTail(core.AppendResult(msg, id, result), f)
	b.out.put(msg, false)
}

// emitBatch writes the responses to a batch as one batch.
func (b *Stdio) emitBatch(rs []*jsonrpc.Response) {
	ms := make([]jsonrpc.Message, len(rs))
	for i, r := range rs {
		ms[i] = r
	}
	b.put(jsonrpc.AppendBatchJSON(nil, ms), false)
}

// put queues one message or batch for the host, in the host's framing.
func (b *Stdio) put(body []byte, droppable bool) {
	b.out.put(plainio.AppendFramed(nil, plainio.Framing(b.framing.Load()), body), droppable)
}

// offload writes a large execution stream to a file and names it with a
// file:// URI.
func (b *Stdio) offload(_ context.Context, _, _ string, r io.Reader) (string, int64, error) {
	return b.files.offload(r)
}

// streamFiles are the files a front offloaded execution streams to (spec
// §10): in dir when set, else in a directory of their own made on first
// use. remove deletes them, and that directory. Safe for concurrent use.
type streamFiles struct {
	dir string

	mu     sync.Mutex
	own    string   // the directory made for them, if any
	names  []string // every file made, partial or complete
	closed bool
}

var errStreamFilesClosed = errors.New("the session is over: its stream files are deleted")

// offload writes r to a new file, complete or not at all, and returns its
// file:// URI and size.
func (f *streamFiles) offload(r io.Reader) (string, int64, error) {
	file, err := f.create()
	if err != nil {
		return "", 0, err
	}
	n, err := io.Copy(file, r)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	final := strings.TrimSuffix(file.Name(), ".part")
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil && f.closed {
		err = errStreamFilesClosed
	}
	if err == nil {
		f.names = append(f.names, final)
		err = os.Rename(file.Name(), final)
	}
	if err != nil {
		os.Remove(file.Name())
		return "", 0, err
	}
	abs, err := filepath.Abs(final)
	if err != nil {
		return "", 0, err
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), n, nil
}

// create makes a new partial file.
func (f *streamFiles) create() (*os.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errStreamFilesClosed
	}
	dir := f.dir
	if dir == "" {
		if f.own == "" {
			own, err := os.MkdirTemp("", "mcp-flow-streams-*")
			if err != nil {
				return nil, err
			}
			f.own = own
		}
		dir = f.own
	}
	file, err := os.CreateTemp(dir, "mcp-flow-stream-*.part")
	if err != nil {
		return nil, err
	}
	f.names = append(f.names, file.Name())
	return file, nil
}

// remove deletes every file made, and the directory made for them; later
// offloads fail.
func (f *streamFiles) remove() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	var errs []error
	for _, name := range f.names {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	f.names = nil
	if f.own != "" {
		errs = append(errs, os.RemoveAll(f.own))
	}
	return errors.Join(errs...)
}
