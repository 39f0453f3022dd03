package flow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/wire"
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
	wt      *webtransport.Session
	ctrl    *webtransport.Stream
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

	// Set during the handshake, read-only afterwards.
	peerMaxFrame uint32
	datagrams    bool
	initParams   *InitializeParams
	initResult   *InitializeResult

	mu          sync.Mutex
	calls       map[jsonrpc.ID]*call // our requests awaiting a response
	streamCalls map[uint32]*call     // our answered requests whose execution streams are unsettled
	handling    map[jsonrpc.ID]*inbound
	openStreams int  // execution streams we are writing
	shutdown    bool // $/shutdown sent or received
	sentFIN     bool
	readEOF     bool
	lastDgErr   time.Time

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
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

func newSession(wt *webtransport.Session, server bool, lim Limits, hooks Hooks, h Handler, log *slog.Logger, codecs codecSet) *Session {
	s := &Session{
		wt:           wt,
		server:       server,
		lim:          lim,
		hooks:        hooks,
		handler:      h,
		log:          log,
		codecs:       codecs,
		calls:        map[jsonrpc.ID]*call{},
		streamCalls:  map[uint32]*call{},
		handling:     map[jsonrpc.ID]*inbound{},
		done:         make(chan struct{}),
		peerMaxFrame: wire.DefaultMaxFrameSize,
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.enc.Store(&codecBox{codecs[codec.JSON]})
	s.state.Store(int32(StateConnected))
	s.touch()
	go func() {
		select {
		case <-wt.Context().Done():
			cause := context.Cause(wt.Context())
			e := &SessionError{Code: CloseGoingAway, Remote: true, Reason: "WebTransport session ended", Err: cause}
			var we *webtransport.SessionError
			if errors.As(cause, &we) {
				e.Code, e.Reason = we.ErrorCode, "closed by the peer"
				if we.Message != "" {
					e.Reason += ": " + we.Message
				}
			}
			// After our FIN the peer may close the session as soon as it has
			// read it, a moment before our reader records the peer's FIN:
			// give the reader that moment before judging.
			for i := 0; i < 50 && s.sentFINLocked() && !s.drained(); i++ {
				time.Sleep(10 * time.Millisecond)
			}
			if s.drained() {
				// The peer closed after a complete drain: a clean end.
				e.Code, e.Err = CloseOK, ErrClosed
			}
			s.closeWith(e)
		case <-s.done:
		}
	}()
	return s
}

// State returns the session's current state.
func (s *Session) State() State { return State(s.state.Load()) }

// Encoding returns the encoding in force (json until initialize completes).
func (s *Session) Encoding() codec.Name { return s.enc.Load().c.Name() }

// DatagramsEnabled reports whether progress, audio and logs travel as
// datagrams on this session (both sides agreed, spec §6).
func (s *Session) DatagramsEnabled() bool { return s.datagrams }

// InitializeParams returns what the client sent in initialize (server side).
func (s *Session) InitializeParams() *InitializeParams { return s.initParams }

// InitializeResult returns the initialize result (both sides).
func (s *Session) InitializeResult() *InitializeResult { return s.initResult }

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
	if err := wire.FinishFrame(buf, 0, s.peerMaxFrame); err != nil {
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
	defer s.wmu.Unlock()
	if s.sentFINLocked() {
		return ErrShuttingDown
	}
	if _, err := s.ctrl.Write(buf); err != nil {
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

// Close ends the session at once, without draining (CloseGoingAway). Use
// Shutdown to end it gracefully.
func (s *Session) Close() error {
	s.closeWith(&SessionError{Code: CloseGoingAway, Reason: "closed", Err: ErrClosed})
	return nil
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
	if !e.Remote {
		_ = s.wt.CloseWithError(e.Code, e.Reason)
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
}

// fail ends the session after a protocol error the control stream cannot
// recover from. It first sends the error reply, finishes the control stream
// and gives the peer a moment to read it, so that the reply is not lost.
func (s *Session) fail(code webtransport.SessionErrorCode, reply *jsonrpc.Response, reason string) {
	if reply != nil {
		s.reply(reply)
	}
	s.wmu.Lock()
	_ = s.ctrl.Close()
	s.wmu.Unlock()
	select {
	case <-s.done:
	case <-time.After(time.Second):
	}
	s.closeWith(&SessionError{Code: code, Reason: reason})
}

// inflightLocked counts what a drain waits for. s.mu must be held.
func (s *Session) inflightLocked() int {
	return len(s.calls) + len(s.streamCalls) + len(s.handling) + s.openStreams
}

// maybeFinish advances a drain: once $/shutdown is in force and nothing is
// in flight, finish the control stream; once both directions are finished,
// close the session cleanly (spec §7.2).
func (s *Session) maybeFinish() {
	s.mu.Lock()
	if !s.shutdown || s.inflightLocked() > 0 {
		s.mu.Unlock()
		return
	}
	finish := !s.sentFIN
	s.sentFIN = true
	bothDone := s.readEOF
	s.mu.Unlock()
	if finish {
		s.wmu.Lock()
		_ = s.ctrl.Close()
		s.wmu.Unlock()
	}
	if !bothDone {
		return
	}
	// Both directions are finished. The server closes the session; the
	// client waits for that close (so that its close cannot overtake the
	// server's last read), and closes itself only if it does not come.
	if s.server {
		s.closeWith(&SessionError{Code: CloseOK, Reason: "shutdown complete", Err: ErrClosed})
		return
	}
	go func() {
		select {
		case <-s.done:
		case <-time.After(2 * time.Second):
			s.closeWith(&SessionError{Code: CloseOK, Reason: "shutdown complete", Err: ErrClosed})
		}
	}()
}

// drained reports whether both directions of the control stream finished.
func (s *Session) drained() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sentFIN && s.readEOF
}

// Shutdown ends the session gracefully (spec §7.2): it sends $/shutdown,
// stops accepting new work, lets every request and execution stream in
// flight in both directions finish, then closes. It returns when the session
// has closed, or when ctx or the drain deadline ends first, in which case
// what is left is cut off and the error says so.
func (s *Session) Shutdown(ctx context.Context, reason string) error {
	s.startShutdown(true, reason)
	t := time.NewTimer(s.lim.DrainTimeout)
	defer t.Stop()
	select {
	case <-s.done:
	case <-ctx.Done():
		s.closeWith(&SessionError{Code: CloseDrainTimeout, Reason: "shutdown cut short", Err: ctx.Err()})
	case <-t.C:
		s.closeWith(&SessionError{Code: CloseDrainTimeout, Reason: "drain deadline passed"})
	}
	var se *SessionError
	if err := s.Err(); errors.As(err, &se) && se.Code == CloseOK {
		return nil
	}
	return s.Err()
}

// startShutdown puts the session in DRAINING; when send is set it tells the
// peer with $/shutdown.
func (s *Session) startShutdown(send bool, reason string) {
	s.mu.Lock()
	already := s.shutdown
	s.shutdown = true
	s.mu.Unlock()
	if already {
		s.maybeFinish()
		return
	}
	if s.State() == StateReady {
		s.setState(StateDraining)
	}
	if send {
		var p any
		if reason != "" {
			p = ShutdownParams{Reason: reason}
		}
		if err := s.Notify(MethodShutdown, p); err != nil {
			s.log.Debug("$/shutdown not sent", "err", err)
		}
	}
	// The drain has a deadline whoever started it.
	go func() {
		t := time.NewTimer(s.lim.DrainTimeout)
		defer t.Stop()
		select {
		case <-s.done:
		case <-t.C:
			s.closeWith(&SessionError{Code: CloseDrainTimeout, Reason: "drain deadline passed"})
		}
	}()
	s.maybeFinish()
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
		s.handleFrame(bytes.Clone(frame))
	}
}

func (s *Session) readFailed(err error) {
	var tl *wire.FrameTooLargeError
	switch {
	case errors.Is(err, io.EOF):
		s.mu.Lock()
		s.readEOF = true
		s.mu.Unlock()
		// A peer that finishes the control stream sends nothing more: that
		// is a shutdown, whether or not it said $/shutdown first.
		s.startShutdown(false, "")
		s.maybeFinish()
	case errors.As(err, &tl):
		// Skipping up to 4 GiB is no option: the stream is lost.
		s.fail(CloseProtocolError, jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest,
			tl.Error()+" (spec §3.1)")), "control frame over the limit")
	default:
		select {
		case <-s.done:
		case <-s.wt.Context().Done():
			// The watcher in newSession classifies the peer's close.
		case <-time.After(200 * time.Millisecond):
			// The stream failed on its own, not with the session.
			s.closeWith(&SessionError{Code: CloseProtocolError, Reason: "control stream failed", Err: err})
		}
	}
}

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
	case MethodCancel, MethodCancelled:
		var p CancelParams
		if json.Unmarshal(n.Params, &p) != nil || !p.RequestID.IsValid() {
			return
		}
		// MCP's notifications/cancelled expects no reply; $/cancel is
		// answered with -32800 (spec §7.1).
		s.cancelInbound(p.RequestID, p.Reason, n.Method == MethodCancel)
	case MethodStreamError:
		var p StreamErrorParams
		if json.Unmarshal(n.Params, &p) == nil {
			s.noteStreamError(p)
		}
	case MethodShutdown:
		if s.faults().NoDrainOnShutdown {
			s.closeWith(&SessionError{Code: CloseGoingAway, Reason: "fault: no drain"})
			return
		}
		s.startShutdown(false, "")
	case MethodProgress:
		var p Progress
		if json.Unmarshal(n.Params, &p) == nil && s.deliverProgress(0, p) {
			return
		}
		s.notify(n)
	case MethodInitialized:
	default:
		s.notify(n)
	}
}

func (s *Session) notify(n *jsonrpc.Request) {
	if s.hooks.Notification != nil {
		s.hooks.Notification(s, n)
	}
}
