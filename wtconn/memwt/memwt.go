// Package memwt is an in-memory WebTransport session pair: two
// wtconn.Session values joined by buffers, for tests of the state machines
// above the seam (flow's sessions, their stalls, resets and closes) under
// testing/synctest, with no sockets and no real time.
//
// It models what a peer can observe of a webtransport-go session (spec §3):
// bidirectional and unidirectional streams whose bytes arrive in order,
// each direction with a bounded buffer (a Write blocks while the reader
// leaves it full, as QUIC flow control makes it); FIN through Close; resets
// through CancelRead and CancelWrite, which reach the other side as a
// *webtransport.StreamError with the code and Remote set and discard what
// was not yet read, as RESET_STREAM does; read and write deadlines, which
// return errors wrapping os.ErrDeadlineExceeded; datagrams up to a maximum
// size (a larger one fails with *quic.DatagramTooLargeError), into a
// bounded queue that drops what does not fit; and CloseWithError, which
// cancels both sides' Context with a *webtransport.SessionError carrying the
// code and message (Remote on the peer's side) as cause and fails every
// pending and later operation with it. A stream reaches the peer's accept
// queue with its first Write, Close or CancelWrite, as webtransport-go's
// stream header does.
//
// It does not model packets, loss, reordering, congestion control, RTT,
// connection-level flow control, stream-count limits or QUIC's idle
// timeout and keep-alives: tests of those run over real QUIC. The contract
// test (memwt_test.go) runs the same assertions against a pair and against
// webtransport-go on loopback.
//
// Everything is synchronised with a mutex and channels; the only timers are
// the deadlines', so a pair made inside a synctest bubble runs on its fake
// clock.
package memwt

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/wtconn"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// This file is long because a session, its streams and its datagrams share
// one lock and one close, and read best side by side.

// Defaults for Config's zero fields.
const (
	// DefaultStreamWindow is the bytes one direction of a stream buffers
	// before a Write blocks.
	DefaultStreamWindow = 256 << 10
	// DefaultDatagramQueue is quic-go's receive queue of datagrams (128).
	DefaultDatagramQueue = 128
	// DefaultMaxDatagramSize is a datagram payload that fits a 1280-byte
	// QUIC packet on any path.
	DefaultMaxDatagramSize = 1200
)

// Config sizes a pair's buffers; zero fields take the defaults above.
type Config struct {
	StreamWindow    int // bytes buffered per stream direction
	DatagramQueue   int // datagrams queued per side before new ones drop
	MaxDatagramSize int // the largest datagram payload SendDatagram takes
}

func (c Config) withDefaults() Config {
	if c.StreamWindow <= 0 {
		c.StreamWindow = DefaultStreamWindow
	}
	if c.DatagramQueue <= 0 {
		c.DatagramQueue = DefaultDatagramQueue
	}
	if c.MaxDatagramSize <= 0 {
		c.MaxDatagramSize = DefaultMaxDatagramSize
	}
	return c
}

// Pair returns the two sides of one in-memory session.
func Pair(cfg Config) (client, server *Session) {
	c := &conn{cfg: cfg.withDefaults(), closed: make(chan struct{})}
	for i := range c.ends {
		s := &Session{c: c, side: i, dgrams: make(chan []byte, c.cfg.DatagramQueue)}
		s.ctx, s.cancel = context.WithCancelCause(context.Background())
		s.bidi.ready = make(chan struct{})
		s.uni.ready = make(chan struct{})
		c.ends[i] = s
	}
	return c.ends[0], c.ends[1]
}

// conn is what the two sides share: one mutex over all their state.
type conn struct {
	cfg    Config
	ends   [2]*Session
	mu     sync.Mutex
	closed chan struct{} // closed by the first CloseWithError
}

// Session is one side of a pair. All methods are safe for concurrent use;
// CloseWithError unblocks every other call of both sides.
type Session struct {
	c      *conn
	side   int
	ctx    context.Context
	cancel context.CancelCauseFunc
	dgrams chan []byte
	err    error // why the session ended, for this side; under c.mu
	bidi   acceptQueue[*Stream]
	uni    acceptQueue[*ReceiveStream]
}

var _ wtconn.Session = (*Session)(nil)

func (s *Session) peer() *Session { return s.c.ends[1-s.side] }

// Context is cancelled when the session ends; its cause is the
// *webtransport.SessionError this side sees.
func (s *Session) Context() context.Context { return s.ctx }

// CloseWithError ends the session for both sides: this side sees a
// *webtransport.SessionError with code and msg, the peer the same with
// Remote set. Only the first close counts.
func (s *Session) CloseWithError(code webtransport.SessionErrorCode, msg string) error {
	s.c.mu.Lock()
	if s.err != nil {
		s.c.mu.Unlock()
		return nil
	}
	s.err = &webtransport.SessionError{ErrorCode: code, Message: msg}
	p := s.peer()
	p.err = &webtransport.SessionError{Remote: true, ErrorCode: code, Message: msg}
	close(s.c.closed)
	s.c.mu.Unlock()
	s.cancel(s.err)
	p.cancel(p.err)
	return nil
}

// closedErr returns why the session ended for this side, or nil; c.mu held.
func (s *Session) closedErr() error { return s.err }

// SendDatagram queues b for the peer, or drops it if the peer's queue is
// full (datagrams are unreliable). One over MaxDatagramSize fails.
func (s *Session) SendDatagram(b []byte) error {
	s.c.mu.Lock()
	err := s.closedErr()
	s.c.mu.Unlock()
	if err != nil {
		return err
	}
	if len(b) > s.c.cfg.MaxDatagramSize {
		return &quic.DatagramTooLargeError{MaxDatagramPayloadSize: int64(s.c.cfg.MaxDatagramSize)}
	}
	select {
	case s.peer().dgrams <- append([]byte(nil), b...):
	default:
	}
	return nil
}

// ReceiveDatagram returns the next datagram, waiting for one.
func (s *Session) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	select {
	case b := <-s.dgrams:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.c.closed:
		s.c.mu.Lock()
		defer s.c.mu.Unlock()
		return nil, s.closedErr()
	}
}

// OpenStreamSync opens a bidirectional stream. It never waits: memwt has
// no stream-count limit.
func (s *Session) OpenStreamSync(context.Context) (wtconn.Stream, error) {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if err := s.closedErr(); err != nil {
		return nil, err
	}
	out := newPipe(s.c, s.side)
	in := newPipe(s.c, 1-s.side)
	mine := &Stream{ReceiveStream{in}, SendStream{out}}
	theirs := &Stream{ReceiveStream{out}, SendStream{in}}
	p := s.peer()
	out.announce = func() { p.bidi.push(theirs) }
	return mine, nil
}

// OpenUniStreamSync opens a unidirectional stream. It never waits.
func (s *Session) OpenUniStreamSync(context.Context) (wtconn.SendStream, error) {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if err := s.closedErr(); err != nil {
		return nil, err
	}
	out := newPipe(s.c, s.side)
	p := s.peer()
	out.announce = func() { p.uni.push(&ReceiveStream{out}) }
	return &SendStream{out}, nil
}

// AcceptStream returns the next bidirectional stream the peer opened.
func (s *Session) AcceptStream(ctx context.Context) (wtconn.Stream, error) {
	st, err := accept(s, &s.bidi, ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// AcceptUniStream returns the next unidirectional stream the peer opened.
func (s *Session) AcceptUniStream(ctx context.Context) (wtconn.ReceiveStream, error) {
	st, err := accept(s, &s.uni, ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// acceptQueue holds the streams the peer opened and this side has not
// accepted; ready is closed and replaced on each push. Under c.mu.
type acceptQueue[T any] struct {
	items []T
	ready chan struct{}
}

func (q *acceptQueue[T]) push(v T) {
	q.items = append(q.items, v)
	close(q.ready)
	q.ready = make(chan struct{})
}

func accept[T any](s *Session, q *acceptQueue[T], ctx context.Context) (T, error) {
	var zero T
	for {
		s.c.mu.Lock()
		if err := s.closedErr(); err != nil {
			s.c.mu.Unlock()
			return zero, err
		}
		if len(q.items) > 0 {
			v := q.items[0]
			q.items = q.items[1:]
			s.c.mu.Unlock()
			return v, nil
		}
		ready := q.ready
		s.c.mu.Unlock()
		select {
		case <-ready:
		case <-s.c.closed:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
}

// pipe is one direction of a stream: what the writing side has sent and
// the reading side not yet read, and how each side ended it. Under c.mu.
type pipe struct {
	c        *conn
	writer   int // the side that writes
	buf      []byte
	fin      bool   // the writer closed (FIN)
	eof      bool   // the reader read the FIN
	closed   bool   // Close was called (a later Write fails)
	reset    *int64 // the writer's CancelWrite code
	stop     *int64 // the reader's CancelRead code
	rdl, wdl time.Time
	changed  chan struct{} // closed and replaced on every change
	announce func()        // puts the stream in the peer's accept queue; once
}

func newPipe(c *conn, writer int) *pipe {
	return &pipe{c: c, writer: writer, changed: make(chan struct{})}
}

// signal wakes whoever waits on p; c.mu held.
func (p *pipe) signal() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// announced puts the stream in the peer's accept queue if it is not yet;
// c.mu held.
func (p *pipe) announced() {
	if a := p.announce; a != nil {
		p.announce = nil
		a()
	}
}

// wait releases c.mu until p changes, the session ends or deadline passes;
// it returns false for the deadline.
func (p *pipe) wait(deadline time.Time) bool {
	ch := p.changed
	p.c.mu.Unlock()
	defer p.c.mu.Lock()
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
	case <-p.c.closed:
	case <-timeout:
		return false
	}
	return true
}

func passed(deadline time.Time) bool { return !deadline.IsZero() && !time.Now().Before(deadline) }

func streamErr(code int64, remote bool) error {
	return &webtransport.StreamError{ErrorCode: webtransport.StreamErrorCode(code), Remote: remote}
}

// errWriteClosed is what a Write after Close returns (quic-go's text).
var errWriteClosed = errors.New("write on closed stream")

// ReceiveStream is the reading side of a stream.
type ReceiveStream struct{ p *pipe }

// Read reads what the writer sent, in order; io.EOF after its FIN.
func (r *ReceiveStream) Read(b []byte) (int, error) {
	p := r.p
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	for {
		switch {
		case p.c.ends[1-p.writer].closedErr() != nil:
			return 0, p.c.ends[1-p.writer].closedErr()
		case p.stop != nil:
			return 0, streamErr(*p.stop, false)
		case p.reset != nil:
			return 0, streamErr(*p.reset, true)
		case len(p.buf) > 0:
			if len(b) == 0 {
				return 0, nil
			}
			n := copy(b, p.buf)
			p.buf = p.buf[n:]
			p.signal()
			return n, nil
		case p.fin:
			p.eof = true
			return 0, io.EOF
		case len(b) == 0:
			return 0, nil
		case passed(p.rdl):
			return 0, os.ErrDeadlineExceeded
		}
		if !p.wait(p.rdl) {
			return 0, os.ErrDeadlineExceeded
		}
	}
}

// CancelRead stops the reading (STOP_SENDING): what was not read is
// dropped, and the writer's next Write fails with a *StreamError with code
// and Remote set.
func (r *ReceiveStream) CancelRead(code webtransport.StreamErrorCode) {
	p := r.p
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.stop != nil || p.eof {
		return
	}
	c := int64(code)
	p.stop = &c
	p.buf = nil
	p.signal()
}

// SetReadDeadline sets when a blocked Read gives up; the zero time: never.
func (r *ReceiveStream) SetReadDeadline(t time.Time) error {
	p := r.p
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.rdl = t
	p.signal()
	return nil
}

// SendStream is the writing side of a stream.
type SendStream struct{ p *pipe }

// Write sends b, blocking while the stream's buffer is full. It returns
// what it wrote and an error if the stream was reset, stopped by the
// reader, closed, its session ended or its deadline passed.
func (w *SendStream) Write(b []byte) (int, error) {
	p := w.p
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	n := 0
	for {
		switch {
		case p.c.ends[p.writer].closedErr() != nil:
			return n, p.c.ends[p.writer].closedErr()
		case p.reset != nil:
			return n, streamErr(*p.reset, false)
		case p.stop != nil:
			return n, streamErr(*p.stop, true)
		case p.closed:
			return n, errWriteClosed
		case len(b) == 0:
			return n, nil
		}
		p.announced()
		if room := p.c.cfg.StreamWindow - len(p.buf); room > 0 {
			k := min(room, len(b))
			p.buf = append(p.buf, b[:k]...)
			b = b[k:]
			n += k
			p.signal()
			continue
		}
		if passed(p.wdl) || !p.wait(p.wdl) {
			return n, os.ErrDeadlineExceeded
		}
	}
}

// Close sends the FIN after what was written.
func (w *SendStream) Close() error {
	p := w.p
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.closed || p.reset != nil {
		return nil
	}
	p.announced()
	p.closed, p.fin = true, true
	p.signal()
	return nil
}

// CancelWrite resets the stream (RESET_STREAM): what the reader has not
// read is dropped and its next Read fails with a *StreamError with code
// and Remote set. After the reader has read the FIN it does nothing.
func (w *SendStream) CancelWrite(code webtransport.StreamErrorCode) {
	p := w.p
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.reset != nil || p.eof {
		return
	}
	p.announced()
	c := int64(code)
	p.reset = &c
	p.buf = nil
	p.signal()
}

// SetWriteDeadline sets when a blocked Write gives up; the zero time: never.
func (w *SendStream) SetWriteDeadline(t time.Time) error {
	p := w.p
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.wdl = t
	p.signal()
	return nil
}

// Stream is a bidirectional stream: a ReceiveStream and a SendStream.
type Stream struct {
	ReceiveStream
	SendStream
}
