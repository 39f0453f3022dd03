package flow

// This file is long because it is the Session type's core, which the other
// session files build on: its fields and states, sending, and its close.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// State is a session's place in the state machine of spec §2 (guide §1).
type State int32

// The states of a session.
const (
	StateClosed State = iota
	StateConnected
	StateControlOpened
	StateInitializing
	StateReady
	StateDraining // $/shutdown sent or received
)

func (s State) String() string {
	return [...]string{"CLOSED", "CONNECTED", "CONTROL_STREAM_OPENED", "INITIALIZING", "READY", "DRAINING"}[s]
}

// Session is one MCP-Flow session over one WebTransport session, in either
// role. Both roles can call and be called.
//
// All methods are safe for concurrent use. Close and Shutdown may be called
// from any goroutine, any number of times; after Done is closed every method
// fails with the session's error (Err).
type Session struct {
	wt      WTSession
	conn    atomic.Pointer[clientConn] // the QUIC connection and its sockets when Dial made them (migrate.go)
	end     *connectEnd                // a server session's CONNECT stream and connection: its clean close (spec §7.2)
	ctrl    WTStream
	srv     serverSide // zero on a client
	lim     Limits
	hooks   Hooks
	handler Handler
	log     *slog.Logger
	codecs  codecSet

	enc atomic.Pointer[codecBox]
	fr  *wire.FrameReader
	wmu writeLock // serialises writes to ctrl: each frame goes whole, in order
	// pending holds frames accepted for the control stream and not yet
	// written, whole and in order (sendWith: a group commit), in a buffer
	// of bufPool's while there are any (an idle session holds none); under
	// wmu, as flushing is.
	pending *[]byte
	nextID  atomic.Uint32
	state   atomic.Int32
	touched atomic.Int64 // unix nanos of the last control frame
	probes  atomic.Int64 // liveness pings sent while waiting (watchWaiting)
	// refusedInit is set once we answered initialize with an error.
	refusedInit atomic.Bool
	// hello is set once $/hello settled the transport (spec §11.3);
	// stateless once a 2026-07-28 request made the session stateless
	// (spec §11.5).
	hello     atomic.Bool
	stateless atomic.Bool
	// statelessVersion (client side) is the 2026-07-28 revision every
	// request names in its _meta, with statelessCaps; set before the
	// session is returned, never changed.
	statelessVersion string
	statelessCaps    json.RawMessage
	// token is the access token the server verified on the CONNECT
	// (spec §9.1); set before the session serves, never changed.
	token *TokenInfo

	// hs holds what initialize settled, published once (handshake.go).
	hs atomic.Pointer[handshake]
	pg progressSender // progress datagrams (datagram.go)

	// The maps below are written under mu, and nil until their first
	// entry: an idle session holds none of them.
	mu          sync.Mutex
	calls       map[jsonrpc.ID]*call // our requests awaiting a response
	streamCalls map[uint32]*call     // our answered requests whose execution streams are unsettled
	handling    map[jsonrpc.ID]*inbound
	unanswered  int           // of handling, those whose answer is not sent: MaxRequestsInFlight counts them
	openStreams int           // execution streams we are writing, until each has settled (a drain waits for them)
	streamSlots int           // of those, the ones MaxConcurrentStreams counts: until the FIN or reset is queued
	dr          drainRef      // the graceful shutdown, $/shutdown (drain.go)
	timers      []*time.Timer // the handshake and idle timeouts (keepTimer)
	reports     reportLimiter // error replies and log lines about datagrams and streams

	// live are the execution streams, written or read, that opened and are
	// not settled (under mu); liveEnded is set once the session's end ended
	// them (endLiveStreams).
	live      map[liveStream]struct{}
	liveEnded bool
	// server is set once, when the session is made; flushing (under wmu)
	// while a sender is to write pending. Here, beside liveEnded, so that
	// the three bools share a word (TestSessionSize).
	server   bool
	flushing bool

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	closeMu  sync.Mutex
	closeErr error
	// open is set, under closeMu, once the session was READY and said so
	// (EventSessionOpen; markOpen): closeWith then sends EventSessionClose.
	open bool
	born time.Time // when the session was made: its EventSessionClose's Duration counts from it
}

type codecBox struct{ c codec.Codec }

// writeLock is a mutex whose waiters wait on a channel. A write to a
// control stream that the peer does not read holds it until the write's
// deadline (Limits.StreamWriteStallTimeout); testing/synctest advances its
// clock to that deadline only once every other goroutine is durably
// blocked, which a goroutine waiting on a channel is and one waiting on a
// sync.Mutex is not. newWriteLock makes one; it is as large as a
// sync.Mutex (TestSessionSize).
type writeLock chan struct{}

func newWriteLock() writeLock { return make(writeLock, 1) }

func (l writeLock) Lock()   { l <- struct{}{} }
func (l writeLock) Unlock() { <-l }

// codecSet holds one codec per encoding, built once with the session's limits.
type codecSet map[codec.Name]codec.Codec

func newCodecSet(lim *codec.Limits) (codecSet, error) {
	l := codec.DefaultLimits()
	if lim != nil {
		l = *lim
	}
	set := codecSet{}
	for _, n := range codec.Names {
		c, err := codec.New(n, l)
		if err != nil {
			return nil, err
		}
		set[n] = c
	}
	return set, nil
}

func newSession(wt WTSession, server bool, lim Limits, hooks Hooks, h Handler, log *slog.Logger, codecs codecSet) *Session {
	s := &Session{
		wt:      wt,
		server:  server,
		lim:     lim,
		hooks:   hooks,
		handler: h,
		log:     log,
		codecs:  codecs,
		done:    make(chan struct{}),
		wmu:     newWriteLock(),
		born:    time.Now(),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.enc.Store(&codecBox{codecs[codec.JSON]})
	s.state.Store(int32(StateConnected))
	s.touch()
	// The peer's close is seen by a callback, not a goroutine that waits
	// for it: an idle session keeps no goroutine (nor its stack) for it.
	context.AfterFunc(wt.Context(), func() {
		select {
		case <-s.done:
			return // we ended it
		default:
		}
		e := closeFromPeer(wtCloseErr(wt), s.idleInDrain())
		if e.Code == CloseGoingAway && e.Err != nil && s.refusedInit.Load() && s.State() < StateReady {
			// A client whose initialize we refused closed its
			// connection, and its close code with it.
			e.Code, e.Reason = CloseRefused, "the peer left after its initialize was refused"
		}
		s.closeWith(e)
	})
	return s
}

// State returns the session's current state.
func (s *Session) State() State { return State(s.state.Load()) }

// Encoding returns the encoding in force (json until initialize completes).
func (s *Session) Encoding() codec.Name { return s.enc.Load().c.Name() }

// DatagramsEnabled reports whether progress, audio and logs travel as
// datagrams on this session (both sides agreed, spec §6).
func (s *Session) DatagramsEnabled() bool { return s.handshake().datagrams }

// InitializeParams returns what the client sent in initialize (server side),
// or nil until initialize has been answered.
func (s *Session) InitializeParams() *InitializeParams { return s.handshake().params }

// InitializeResult returns the initialize result (both sides), or nil until
// initialize has completed.
func (s *Session) InitializeResult() *InitializeResult { return s.handshake().result }

// Done is closed when the session has ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns why the session ended, or nil while it is open. A session that
// ended by a graceful $/shutdown has a *SessionError with code CloseOK.
func (s *Session) Err() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	return s.closeErr
}

// Context returns a context that is cancelled when the session ends.
func (s *Session) Context() context.Context { return s.ctx }

func (s *Session) touch() { s.touched.Store(time.Now().UnixNano()) }

func (s *Session) setState(st State) { s.state.Store(int32(st)) }

// ---- writing ----

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// send encodes m in the encoding in force and writes it as one frame.
func (s *Session) send(m jsonrpc.Message) error { return s.sendWith(s.enc.Load().c, m, nil) }

// sendWith encodes m (or batch, when m is nil) with c and writes one frame.
func (s *Session) sendWith(c codec.Codec, m jsonrpc.Message, batch []jsonrpc.Message) error {
	bp := bufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 1<<20 {
			bufPool.Put(bp)
		}
	}()
	buf := wire.BeginFrame((*bp)[:0])
	var err error
	if m != nil {
		buf, err = c.Append(buf, m)
	} else {
		buf, err = c.AppendBatch(buf, batch)
	}
	*bp = buf
	if err != nil {
		return err
	}
	if err := wire.FinishFrame(buf, 0, s.handshake().peerMaxFrame); err != nil {
		var tl *wire.FrameTooLargeError
		if !errors.As(err, &tl) {
			return err
		}
		// A result too large for the peer's frames: tell the peer rather
		// than leave the request hanging (spec §8.1). In a batch reply,
		// every result becomes that error.
		tooLarge := func(id jsonrpc.ID) *jsonrpc.Response {
			return jsonrpc.NewErrorResponse(id, jsonrpc.NewError(jsonrpc.CodeContentTooLarge,
				"result exceeds the peer's maxFrameSize; send it on an execution stream"))
		}
		if resp, ok := m.(*jsonrpc.Response); ok && resp.Error == nil {
			return s.sendWith(c, tooLarge(resp.ID), nil)
		}
		if m == nil {
			changed := false
			errs := make([]jsonrpc.Message, len(batch))
			for i, r := range batch {
				errs[i] = r
				if resp, ok := r.(*jsonrpc.Response); ok && resp.Error == nil {
					errs[i], changed = tooLarge(resp.ID), true
				}
			}
			if changed {
				return s.sendWith(c, nil, errs)
			}
		}
		return err
	}
	s.wmu.Lock()
	if s.ctx.Err() != nil {
		// The session has ended (closeWith cancelled its context before
		// it closes): its close code is its last word. The answer of a
		// handler that the end cancelled goes nowhere; written here it
		// could reach the peer before the close, and a call cut off by a
		// drain deadline would read as answered (spec §7.2, §8.2).
		s.wmu.Unlock()
		return s.Err()
	}
	if s.ctrl == nil {
		// A server session that a shutdown reached before its client opened
		// the control stream: nothing can be written yet.
		s.wmu.Unlock()
		return errNoControl
	}
	if s.finSent() {
		s.wmu.Unlock()
		return ErrShuttingDown
	}
	switch {
	case len(buf) > coalesceMax:
		// Too large to copy: written as it is, after the frames before it.
		err = s.flushLocked()
		if err == nil {
			_, err = writeStalling(s.ctrl, buf, s.lim.StreamWriteStallTimeout)
		}
		s.wmu.Unlock()
	case s.flushing:
		// The sender that is to write will write this frame too.
		s.take(buf)
		s.wmu.Unlock()
	default:
		s.take(buf)
		s.flushing = true
		s.wmu.Unlock()
		// Let the goroutines that are ready run first: the frames they
		// send meanwhile leave in the same write, and so in the same
		// packet (as grpc-go's writer yields before a small flush). With
		// nothing else ready it returns at once.
		if h := yieldHook.Load(); h != nil {
			(*h)()
		} else {
			runtime.Gosched()
		}
		s.wmu.Lock()
		err = s.flushLocked()
		s.flushing = false
		s.wmu.Unlock()
	}
	if errors.Is(err, ErrWriteStalled) {
		// The peer reads nothing of the control stream, and a frame may
		// be cut in two: the session cannot go on (spec §8.2).
		s.closeWith(&SessionError{Code: CloseStalled, Reason: fmt.Sprintf("the peer read nothing of the control stream for %v", s.lim.StreamWriteStallTimeout), Err: err})
	}
	if err != nil {
		return err
	}
	s.touch()
	if s.hooks.Observe != nil {
		s.observe(Event{Kind: EventControl, Bytes: int64(len(buf)), Encoding: c.Name()})
	}
	return nil
}

// yieldHook, when set (tests only: export_test.go), runs in sendWith in
// place of the yield before a write of pending frames.
var yieldHook atomic.Pointer[func()]

// coalesceMax is the largest frame sendWith copies to write it with
// others (a tools/call and its answer are a few hundred bytes); a larger
// one is written from its own buffer.
const coalesceMax = 16 << 10

// flushLocked writes the pending frames in one write, under wmu. Once the
// session's context has ended nothing more is written, and they are
// dropped (see sendWith). A write that fails leaves the control stream
// broken, and the session with it: the frames are dropped too.
func (s *Session) flushLocked() error {
	p := s.pending
	if p == nil {
		return nil
	}
	s.pending = nil
	var err error
	if s.ctx.Err() != nil {
		err = s.Err()
	} else {
		_, err = writeStalling(s.ctrl, *p, s.lim.StreamWriteStallTimeout)
	}
	if cap(*p) <= 1<<20 {
		*p = (*p)[:0]
		bufPool.Put(p)
	}
	return err
}

// take adds the frame buf to the pending ones, under wmu.
func (s *Session) take(buf []byte) {
	if s.pending == nil {
		s.pending = bufPool.Get().(*[]byte)
		*s.pending = (*s.pending)[:0]
	}
	*s.pending = append(*s.pending, buf...)
}

func (s *Session) reply(resp *jsonrpc.Response) {
	if err := s.send(resp); err != nil {
		s.log.Debug("reply not sent", "id", resp.ID.String(), "err", err)
	}
}

func (s *Session) replyError(id jsonrpc.ID, code jsonrpc.Code, msg string) {
	s.reply(jsonrpc.NewErrorResponse(id, jsonrpc.NewError(code, msg)))
}

// Notify sends a notification.
func (s *Session) Notify(method string, params any) error {
	req, err := jsonrpc.NewRequest(jsonrpc.ID{}, method, params)
	if err != nil {
		return err
	}
	return s.send(req)
}

// ---- closing ----

// Close ends the session at once, without draining (CloseGoingAway), unless
// it has ended already. It returns once the session has ended (Done is
// closed), whoever ended it. Use Shutdown to end it gracefully.
func (s *Session) Close() error {
	s.closeWith(&SessionError{Code: CloseGoingAway, Reason: "Close called, no drain", Err: ErrClosed})
	<-s.done
	return nil
}

// maxCloseMessage is the longest close message WebTransport carries.
const maxCloseMessage = 1024

// wtCloseErr returns why wt ended: the peer's close (*webtransport.SessionError)
// or the CONNECT stream's error. webtransport-go keeps it unexported and
// gives its context no cause; once the session is closed, OpenStream returns
// it. Other dialects give it as their context's cause (WTSession).
func wtCloseErr(wt WTSession) error {
	ws, ok := wt.(wtSession)
	if !ok {
		if err := context.Cause(wt.Context()); err != nil {
			return err
		}
		return errors.New("WebTransport session ended for no reason given")
	}
	st, err := ws.OpenStream()
	if err == nil {
		st.CancelWrite(0)
		st.CancelRead(0)
		return errors.New("WebTransport session ended for no reason given")
	}
	return err
}

func (s *Session) closeWith(e *SessionError) {
	s.closeMu.Lock()
	if s.closeErr != nil {
		s.closeMu.Unlock()
		return
	}
	s.closeErr = e
	open := s.open
	s.closeMu.Unlock()
	s.setState(StateClosed)
	s.cancel()
	if h := closingHook.Load(); h != nil {
		(*h)()
	}
	s.mu.Lock()
	for _, t := range s.timers {
		t.Stop()
	}
	s.dr.end()
	s.mu.Unlock()
	if !e.Remote {
		msg := e.Reason
		if msg == "" {
			msg = CloseText(e.Code)
		}
		if len(msg) > maxCloseMessage {
			msg = msg[:maxCloseMessage]
		}
		if end := s.end; end == nil || e.Code != CloseOK || !end.close(uint32(e.Code), msg, s.lim.PeerFINWait) {
			_ = s.wt.CloseWithError(e.Code, msg)
		}
	}
	if k := s.conn.Load(); k != nil {
		// webtransport-go closes the connection it dialled after the
		// session, but on a goroutine of its own: a process that exits
		// next would leave the server holding the connection until its
		// idle timeout. Close it, and its sockets, before Close returns.
		_ = k.conn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
		k.closeSockets()
	}
	s.mu.Lock()
	for _, in := range s.handling {
		in.cancel(e)
	}
	s.mu.Unlock()
	close(s.done)
	s.endLiveStreams()
	if open {
		reason := e.Reason
		if reason == "" {
			reason = CloseText(e.Code)
		}
		if e.Err != nil && e.Err != ErrClosed {
			reason += ": " + e.Err.Error()
		}
		s.observe(Event{Kind: EventSessionClose, CloseCode: e.Code, Reason: reason, Duration: time.Since(s.born)})
	} else {
		s.endedUnopened(e)
	}
	if s.hooks.Closed != nil {
		s.hooks.Closed(s, e)
	}
}

// markOpen records that s is READY and emits EventSessionOpen, unless the
// session has ended already: one that ended first was never open, and gets
// no EventSessionClose either. The event goes out under closeMu, so that
// closeWith's EventSessionClose cannot overtake it.
func (s *Session) markOpen() {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closeErr != nil || s.open {
		return
	}
	s.open = true
	s.observe(Event{Kind: EventSessionOpen, Encoding: s.Encoding()})
}

// reasonShutBeforeControl is the close reason of a server session that a
// shutdown reached before its client opened the control stream.
const reasonShutBeforeControl = "shut down before the control stream opened"

// endedUnopened reports the end of a session that never was READY: on a
// server, EventRefused when the server refused it (handshake timeout,
// refused initialize or $/hello, a shutdown before the control stream);
// else, and on a client, a debug line only (the peer left, or Dial failed
// and said why).
func (s *Session) endedUnopened(e *SessionError) {
	why := ""
	switch {
	case !s.server:
	case e.Code == CloseHandshakeTimeout:
		why = "handshakes"
	case e.Code == CloseRefused || s.refusedInit.Load():
		why = "initialize"
	case e.Code == CloseOK && e.Reason == reasonShutBeforeControl:
		why = "shutting-down"
	}
	if why == "" {
		s.log.Debug("session ended before READY", "code", uint64(e.Code), "words", CloseText(e.Code), "reason", e.Reason)
		return
	}
	s.observe(Event{Kind: EventRefused, Outcome: why, CloseCode: e.Code, Reason: e.Reason})
}

// fail ends the session after a protocol error the control stream cannot
// recover from. It first sends the error reply, finishes the control stream
// and gives the peer a moment to read it, so that the reply is not lost.
func (s *Session) fail(code webtransport.SessionErrorCode, reply *jsonrpc.Response, reason string) {
	if reply != nil {
		s.reply(reply)
	}
	s.wmu.Lock()
	if s.ctrl != nil {
		_ = s.flushLocked() // the reply first
		_ = s.ctrl.Close()
	}
	s.wmu.Unlock()
	select {
	case <-s.done:
	case <-time.After(time.Second):
	}
	s.closeWith(&SessionError{Code: code, Reason: reason})
}
