package flow

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
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
	conn    atomic.Pointer[quic.Conn] // the QUIC connection when Dial made it
	ctrl    WTStream
	server  bool
	srv     serverSide // zero on a client
	lim     Limits
	hooks   Hooks
	handler Handler
	log     *slog.Logger
	codecs  codecSet

	state   atomic.Int32
	enc     atomic.Pointer[codecBox]
	fr      *wire.FrameReader
	wmu     sync.Mutex // serialises writes to ctrl, so each frame is one write
	nextID  atomic.Uint32
	touched atomic.Int64 // unix nanos of the last control frame
	readAt  atomic.Int64 // unix nanos of the last control frame read, or of our $/shutdown
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

	// hs holds what initialize settled, published once (handshake.go).
	hs atomic.Pointer[handshake]
	pg progressSender // progress datagrams (datagram.go)

	mu          sync.Mutex
	calls       map[jsonrpc.ID]*call // our requests awaiting a response
	streamCalls map[uint32]*call     // our answered requests whose execution streams are unsettled
	handling    map[jsonrpc.ID]*inbound
	unanswered  int             // of handling, those whose answer is not sent: MaxRequestsInFlight counts them
	openStreams int             // execution streams we are writing
	shutdown    bool            // $/shutdown sent or received
	sentShut    bool            // we sent $/shutdown
	gotShut     bool            // the peer sent $/shutdown, or finished the control stream
	notice      *ShutdownParams // our $/shutdown, until our own calls are done
	announcing  int             // 1 while our $/shutdown is being written: no FIN before it
	sentFIN     bool
	readEOF     bool
	finTimer    *time.Timer   // ShutdownGrace before our FIN
	closeTimer  *time.Timer   // PeerFINWait before our clean close
	timers      []*time.Timer // the handshake and idle timeouts (keepTimer)
	reports     reportLimiter // error replies and log lines about datagrams and streams

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	draining chan struct{} // closed when $/shutdown is in force
	closeMu  sync.Mutex
	closeErr error
}

type codecBox struct{ c codec.Codec }

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
		wt:          wt,
		server:      server,
		lim:         lim,
		hooks:       hooks,
		handler:     h,
		log:         log,
		codecs:      codecs,
		calls:       map[jsonrpc.ID]*call{},
		streamCalls: map[uint32]*call{},
		handling:    map[jsonrpc.ID]*inbound{},
		done:        make(chan struct{}),
		draining:    make(chan struct{}),
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

// Draining is closed once a shutdown is in force (spec §7.2): $/shutdown
// was received (or the peer finished its control stream), or Shutdown was
// called, and in that case our $/shutdown has been sent already unless our
// own calls are still in flight. From then on Call refuses new requests.
// It is never closed on a session that ends without a shutdown.
func (s *Session) Draining() <-chan struct{} { return s.draining }

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
	if s.ctrl == nil {
		// A server session that a shutdown reached before its client opened
		// the control stream: nothing can be written yet.
		s.wmu.Unlock()
		return errNoControl
	}
	if s.sentFINLocked() {
		s.wmu.Unlock()
		return ErrShuttingDown
	}
	_, err = writeStalling(s.ctrl, buf, s.lim.StreamWriteStallTimeout)
	s.wmu.Unlock()
	if errors.Is(err, ErrWriteStalled) {
		// The peer reads nothing of the control stream, and a frame may
		// be cut in two: the session cannot go on (spec §8.2).
		s.closeWith(&SessionError{Code: CloseStalled, Reason: fmt.Sprintf("the peer read nothing of the control stream for %v", s.lim.StreamWriteStallTimeout), Err: err})
	}
	if err != nil {
		return err
	}
	s.touch()
	return nil
}

func (s *Session) sentFINLocked() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sentFIN
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

// connCatcher keeps the QUIC connection that webtransport.Transport dials,
// so that the session can close it (webtransport.Transport.DialAddr).
type connCatcher struct{ c *quic.Conn }

func (k *connCatcher) dial(ctx context.Context, addr string, tlsConf *tls.Config, conf *quic.Config) (*quic.Conn, error) {
	c, err := quic.DialAddrEarly(ctx, addr, tlsConf, conf)
	k.c = c
	return c, err
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

// idleInDrain reports whether a $/shutdown is in force and nothing is in
// flight: a peer's close now loses nothing (spec §7.2).
func (s *Session) idleInDrain() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdown && s.inflightLocked() == 0
}

func (s *Session) closeWith(e *SessionError) {
	s.closeMu.Lock()
	if s.closeErr != nil {
		s.closeMu.Unlock()
		return
	}
	s.closeErr = e
	s.closeMu.Unlock()
	s.setState(StateClosed)
	s.cancel()
	s.mu.Lock()
	for _, t := range s.timers {
		t.Stop()
	}
	for _, t := range []*time.Timer{s.finTimer, s.closeTimer} {
		if t != nil {
			t.Stop()
		}
	}
	s.mu.Unlock()
	if !e.Remote {
		msg := e.Reason
		if msg == "" {
			msg = CloseText(e.Code)
		}
		if len(msg) > maxCloseMessage {
			msg = msg[:maxCloseMessage]
		}
		_ = s.wt.CloseWithError(e.Code, msg)
	}
	if c := s.conn.Load(); c != nil {
		// webtransport-go closes the connection it dialled after the
		// session, but on a goroutine of its own: a process that exits
		// next would leave the server holding the connection until its
		// idle timeout. Close it before Close returns.
		_ = c.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
	}
	s.mu.Lock()
	for _, in := range s.handling {
		in.cancel(e)
	}
	s.mu.Unlock()
	close(s.done)
	if e.Code != CloseOK {
		s.log.Debug("session closed", "err", e)
	}
	if s.hooks.Closed != nil {
		s.hooks.Closed(s, e)
	}
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
		_ = s.ctrl.Close()
	}
	s.wmu.Unlock()
	select {
	case <-s.done:
	case <-time.After(time.Second):
	}
	s.closeWith(&SessionError{Code: code, Reason: reason})
}

// inflightLocked counts what a drain waits for. s.mu must be held.
func (s *Session) inflightLocked() int {
	n := len(s.calls) + len(s.streamCalls) + len(s.handling) + s.openStreams + s.announcing
	if s.notice != nil {
		n++
	}
	return n
}

// announce sends our $/shutdown once our own calls, and the execution
// streams of their results, are done (spec §7.2): the peer that receives it
// closes the session soon after its own work ends, so it must not come
// while we still read from the peer. Until then new requests are refused
// all the same.
func (s *Session) announce() {
	s.mu.Lock()
	if s.notice == nil || len(s.calls)+len(s.streamCalls) > 0 {
		s.mu.Unlock()
		return
	}
	p := s.notice
	s.notice = nil
	if s.gotShut {
		// The peer started a shutdown too: it needs no word from us.
		s.mu.Unlock()
		return
	}
	s.announcing = 1
	s.readAt.Store(time.Now().UnixNano()) // the grace counts from our $/shutdown too
	s.mu.Unlock()
	var params any
	if p.Reason != "" {
		params = p
	}
	err := s.Notify(protocol.MethodShutdown, params)
	s.mu.Lock()
	s.announcing = 0
	if errors.Is(err, errNoControl) {
		// Announced again once the control stream is open (serve).
		s.notice = p
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Debug("$/shutdown not sent", "err", err)
	}
}

// maybeFinish advances a drain (spec §7.2). Once $/shutdown is in force and
// nothing is in flight, it finishes (FIN) our direction of the control
// stream: at once on the side that received $/shutdown; ShutdownGrace after
// the last frame read on the side that sent it, so that a request that
// crossed its $/shutdown is still answered (-32006) before the FIN. After
// the FIN, the side that received $/shutdown closes the session (CloseOK)
// when the peer's FIN has come, or PeerFINWait after its own FIN if it does
// not come (a peer that follows only the guide never sends it). The side
// that sent $/shutdown waits for that close, and closes itself PeerFINWait
// after it has read the peer's FIN if the close does not come.
func (s *Session) maybeFinish() {
	s.announce()
	s.mu.Lock()
	if !s.shutdown || s.inflightLocked() > 0 {
		s.mu.Unlock()
		return
	}
	if !s.sentFIN && !s.gotShut {
		if wait := ShutdownGrace - time.Since(time.Unix(0, s.readAt.Load())); wait > 0 {
			if s.finTimer == nil {
				s.finTimer = time.AfterFunc(wait, func() {
					s.mu.Lock()
					s.finTimer = nil
					s.mu.Unlock()
					s.maybeFinish()
				})
			}
			s.mu.Unlock()
			return
		}
	}
	s.mu.Unlock()
	if !s.finish() {
		return
	}
	s.mu.Lock()
	if s.gotShut && s.readEOF {
		s.mu.Unlock()
		s.closeWith(&SessionError{Code: CloseOK, Reason: "shutdown complete", Err: ErrClosed})
		return
	}
	defer s.mu.Unlock()
	if s.closeTimer == nil && (s.gotShut || s.readEOF) {
		s.closeTimer = time.AfterFunc(PeerFINWait, func() {
			reason := "shutdown complete; the peer did not finish the control stream"
			if !s.gotShut {
				reason = "shutdown complete; the peer did not close the session"
			}
			s.closeWith(&SessionError{Code: CloseOK, Reason: reason, Err: ErrClosed})
		})
	}
}

// finish sends our FIN on the control stream if the drain allows it, and
// reports whether it has been sent. Holding wmu orders it after every frame
// already written: a reply is either written before the FIN or not at all.
func (s *Session) finish() bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	fin := !s.sentFIN && s.shutdown && s.inflightLocked() == 0 && s.ctrl != nil
	if fin {
		s.sentFIN = true
	}
	sent := s.sentFIN
	s.mu.Unlock()
	if fin {
		_ = s.ctrl.Close()
	}
	return sent
}

// drainLeft describes what a drain deadline cut off.
func (s *Session) drainLeft() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d requests of ours, %d of the peer's and %d execution streams still in flight",
		len(s.calls), len(s.handling), len(s.streamCalls)+s.openStreams)
}

// Shutdown ends the session gracefully (spec §7.2): it sends $/shutdown,
// stops accepting new work, lets every request and execution stream in
// flight in both directions finish, then closes. It returns when the session
// has closed, or when ctx or the drain deadline ends first, in which case
// what is left is cut off and the error says so.
//
// The drain deadline starts when Shutdown is called, and nothing it writes
// can hold it past that deadline or ctx: $/shutdown is written on a
// goroutine of its own (a peer that reads nothing holds the write until the
// close at the deadline ends it).
func (s *Session) Shutdown(ctx context.Context, reason string) error {
	t := time.NewTimer(s.lim.DrainTimeout)
	defer t.Stop()
	go s.startShutdown(true, reason)
	select {
	case <-s.done:
	case <-ctx.Done():
		s.closeWith(&SessionError{Code: CloseDrainTimeout, Reason: "shutdown cut short: " + s.drainLeft(), Err: ctx.Err()})
	case <-t.C:
		s.closeWith(&SessionError{Code: CloseDrainTimeout, Reason: s.drainLeft()})
	}
	var se *SessionError
	if err := s.Err(); errors.As(err, &se) && (se.clean() || se.Code == CloseRefused) {
		// A session whose initialize was refused had nothing to drain: its
		// ending, however it came, is not a failed shutdown.
		return nil
	}
	return s.Err()
}

// startShutdown puts the session in DRAINING. send tells the peer with
// $/shutdown (we start the shutdown); without it the peer started it.
func (s *Session) startShutdown(send bool, reason string) { s.drainOn(send, false, reason) }

// drainOn is startShutdown; fin says that the peer started it by finishing
// the control stream rather than with $/shutdown.
func (s *Session) drainOn(send, fin bool, reason string) {
	s.mu.Lock()
	already := s.shutdown
	s.shutdown = true
	if !send && (!fin || !s.sentShut) {
		// A FIN is a $/shutdown from the peer only when we did not send one.
		s.gotShut = true
	}
	send = send && !already
	if send {
		s.sentShut = true
		s.notice = &ShutdownParams{Reason: reason}
	}
	s.mu.Unlock()
	if already {
		s.maybeFinish()
		return
	}
	if s.State() == StateReady {
		s.setState(StateDraining)
	}
	if s.server && s.State() < StateControlOpened {
		// The client has not opened its control stream: nothing has been
		// accepted, so nothing is drained (a shutdown racing a CONNECT).
		s.closeWith(&SessionError{Code: CloseOK, Reason: "shut down before the control stream opened", Err: ErrClosed})
	}
	// The drain has a deadline whoever started it.
	go func() {
		t := time.NewTimer(s.lim.DrainTimeout)
		defer t.Stop()
		select {
		case <-s.done:
		case <-t.C:
			s.closeWith(&SessionError{Code: CloseDrainTimeout, Reason: s.drainLeft()})
		}
	}()
	s.maybeFinish()
	close(s.draining)
}

// ---- reading ----

// readLoop reads control frames until the stream ends.
func (s *Session) readLoop() {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("session failed", "panic", p)
			s.closeWith(&SessionError{Code: CloseInternalError, Reason: fmt.Sprint("internal error: ", p)})
		}
	}()
	for {
		frame, err := s.fr.ReadFrame()
		if errors.Is(err, wire.ErrZeroLength) {
			// The stream is still in step: answer and read on.
			s.replyError(jsonrpc.NullID, jsonrpc.CodeInvalidRequest, "control frame of length 0 (spec §3.1)")
			continue
		}
		if err != nil {
			s.readFailed(err)
			return
		}
		s.touch()
		s.readAt.Store(time.Now().UnixNano())
		s.handleFrame(bytes.Clone(frame))
	}
}

func (s *Session) readFailed(err error) {
	var tl *wire.FrameTooLargeError
	switch {
	case errors.Is(err, io.EOF):
		// A peer that finishes the control stream sends nothing more: that
		// is a shutdown, whether or not it said $/shutdown first. Our calls
		// it has not answered were read after its FIN, or never: it will
		// not process them (spec §7.2).
		s.mu.Lock()
		s.readEOF = true
		unanswered := make([]*call, 0, len(s.calls))
		for id, c := range s.calls {
			unanswered = append(unanswered, c)
			delete(s.calls, id)
		}
		s.mu.Unlock()
		for _, c := range unanswered {
			c.resp <- jsonrpc.NewErrorResponse(c.id, jsonrpc.NewError(jsonrpc.CodeShuttingDown,
				"the peer finished the control stream before reading this request; it was not processed (spec §7.2)"))
		}
		s.drainOn(false, true, "")
	case errors.As(err, &tl):
		// Skipping up to 4 GiB is no option: the stream is lost.
		s.fail(CloseProtocolError, jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest,
			tl.Error()+" (spec §3.1)")), "control frame over the limit")
	case connectionLost(err):
		s.closeWith(closeFromPeer(err, false))
	case errors.As(err, new(*webtransport.StreamError)):
		// The control stream was reset while the session lives on
		// (webtransport-go reports a closing session as the session's
		// error, not as a stream reset): the peer broke the protocol.
		s.closeWith(&SessionError{Code: CloseProtocolError, Reason: "control stream reset", Err: err})
	default:
		select {
		case <-s.done:
		case <-s.wt.Context().Done():
			// The watcher in newSession classifies the peer's close.
		case <-time.After(controlFailWait):
			s.closeWith(&SessionError{Code: CloseProtocolError, Reason: "control stream failed", Err: err})
		}
	}
}

// controlFailWait bounds how long a control stream that failed with an
// error of no known kind waits for its session to end before the failure is
// judged the stream's own.
const controlFailWait = 200 * time.Millisecond

// handleFrame decodes one frame and dispatches its messages.
func (s *Session) handleFrame(data []byte) {
	c := s.enc.Load().c
	payload, err := c.Decode(data)
	if err != nil {
		s.undecodable(c, data, err)
		return
	}
	msgs, replies := jsonrpc.Validate(payload)
	var col *collector
	if payload.Batch && len(payload.Elems) == 0 {
		// JSON-RPC 2.0 §6: an empty batch gets one response, not an array.
		s.reply(replies[0])
		return
	}
	if payload.Batch {
		col = &collector{s: s, out: make([]jsonrpc.Message, 0, len(replies))}
		col.pending.Add(1) // released below, once every message is dispatched
	}
	for _, r := range replies {
		if col != nil {
			col.add(r)
		} else {
			s.reply(r)
		}
	}
	for _, m := range msgs {
		s.dispatch(m, col)
	}
	if col != nil {
		col.done()
	}
}

// undecodable answers a frame that did not decode in the encoding in force:
// -32003 if it is a valid payload in another encoding (with its id, when it
// has one), else -32700 (spec §4.3), which names the limit when another
// encoding refused the frame for one (spec §8).
func (s *Session) undecodable(c codec.Codec, data []byte, err error) {
	other, p, limitErr := codec.Detect(data, c.Name(), s.codecs)
	if other != "" {
		id := jsonrpc.NullID
		if !p.Batch && len(p.Elems) == 1 && p.Elems[0].ID != nil {
			if v, err := jsonrpc.ParseID(p.Elems[0].ID); err == nil {
				id = v
			}
		}
		s.replyError(id, jsonrpc.CodeEncodingMismatch, "frame is "+string(other)+", but the session's encoding is "+string(c.Name())+" (spec §4.3)")
		return
	}
	if limitErr != nil {
		err = limitErr // a payload in another encoding, past a limit
	}
	s.replyError(jsonrpc.NullID, jsonrpc.CodeParseError, err.Error())
}

// collector gathers the replies to one batch and sends them as one batch
// (JSON-RPC 2.0 §6), once every request in it has been answered.
type collector struct {
	s       *Session
	mu      sync.Mutex
	out     []jsonrpc.Message
	pending sync.WaitGroup
}

func (c *collector) add(r *jsonrpc.Response) {
	c.mu.Lock()
	c.out = append(c.out, r)
	c.mu.Unlock()
}

func (c *collector) done() {
	c.pending.Done()
	go func() {
		c.pending.Wait()
		if len(c.out) == 0 {
			return // a batch of notifications gets no reply
		}
		if err := c.s.sendWith(c.s.enc.Load().c, nil, c.out); err != nil {
			c.s.log.Debug("batch reply not sent", "err", err)
		}
	}()
}

func (s *Session) dispatch(m jsonrpc.Message, col *collector) {
	switch m := m.(type) {
	case *jsonrpc.Response:
		s.deliver(m)
	case *jsonrpc.Request:
		if !m.IsCall() {
			s.handleNotification(m)
			return
		}
		if strings.HasPrefix(m.Method, protocol.NotificationPrefix) {
			// MCP's notifications carry no id; the published v0.1 example
			// client sends notifications/initialized with "id":0. Such a
			// message is taken as the notification it names and not
			// answered: an answer would be read as the reply to the
			// client's next request (spec §2).
			s.log.Debug("a notification with an id, taken as a notification", "method", m.Method, "id", m.ID.String())
			s.handleNotification(m)
			return
		}
		answer := s.reply
		if col != nil {
			col.pending.Add(1)
			answer = func(r *jsonrpc.Response) { col.add(r); col.pending.Done() }
		}
		s.handleCall(m, answer)
	}
}

func (s *Session) handleNotification(n *jsonrpc.Request) {
	switch n.Method {
	case protocol.MethodCancel, protocol.MethodCancelled:
		var p CancelParams
		if json.Unmarshal(n.Params, &p) != nil || !p.RequestID.IsValid() {
			return
		}
		// MCP's notifications/cancelled expects no reply; $/cancel is
		// answered with -32800 (spec §7.1).
		s.cancelInbound(p.RequestID, p.Reason, n.Method == protocol.MethodCancel)
	case protocol.MethodStreamError:
		var p StreamErrorParams
		if json.Unmarshal(n.Params, &p) == nil {
			s.noteStreamError(p)
		}
	case protocol.MethodShutdown:
		if s.server && s.State() < StateReady {
			// Before READY only initialize and ping are processed (spec
			// §2): there is nothing to drain, and the next request is
			// answered as any other before initialize.
			s.replyError(jsonrpc.NullID, jsonrpc.CodeInvalidRequest, "$/shutdown before initialize: the session is not initialized, so it is not drained (spec §2)")
			return
		}
		if s.faults().NoDrainOnShutdown {
			s.closeWith(&SessionError{Code: CloseGoingAway, Reason: "fault: no drain"})
			return
		}
		s.startShutdown(false, "")
	case protocol.MethodProgress:
		var p Progress
		if json.Unmarshal(n.Params, &p) == nil && s.deliverProgress(0, p) {
			return
		}
		s.notify(n)
	case protocol.MethodInitialized:
	default:
		s.notify(n)
	}
}

func (s *Session) notify(n *jsonrpc.Request) {
	if s.hooks.Notification != nil {
		s.hooks.Notification(s, n)
	}
}
