package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/quic-go/webtransport-go"
)

// Reading the control stream: one goroutine per session reads frames,
// decodes them in the encoding in force, validates and dispatches them
// (spec §3.1, §4.3); requests run on goroutines of their own (inbound.go).

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
		if err == nil || errors.Is(err, wire.ErrZeroLength) {
			s.controlRead(frame)
		}
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
		s.dr.noteRead()    // atomic: no lock per frame
		if !s.fr.Owned() { // a pooled buffer, reused by the next frame
			frame = bytes.Clone(frame)
		}
		s.handleFrame(frame)
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
		first := s.drainStartedLocked(s.drainLocked().readFIN())
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
		s.drainBegun(first)
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

// controlRead emits EventControl for a frame read (its payload; a frame
// of length 0 has none), in the encoding it is decoded in.
func (s *Session) controlRead(payload []byte) {
	if s.hooks.Observe != nil {
		s.observe(Event{Kind: EventControl, Inbound: true, Bytes: int64(wire.FrameHeaderLen + len(payload)), Encoding: s.Encoding()})
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
		var p ShutdownParams
		reason := ""
		if n.Params != nil && json.Unmarshal(n.Params, &p) == nil {
			reason = p.Reason
		}
		s.peerShutdown(reason)
	case protocol.MethodProgress:
		var p Progress
		if json.Unmarshal(n.Params, &p) == nil {
			if took, _ := s.deliverProgress(0, p); took {
				return
			}
		}
		s.notify(n)
	case protocol.MethodInitialized:
	default:
		if strings.HasPrefix(n.Method, protocol.MethodPrefix) {
			// A transport notification this session does not know: ignored
			// (JSON-RPC), and never handed to the application, which would
			// take it for MCP and a bridge pass it on to a plain MCP peer.
			s.log.Debug("an unknown MCP-Flow notification, ignored", "method", n.Method)
			return
		}
		if !s.server && s.routeToCall(n) {
			return
		}
		s.notify(n)
	}
}

func (s *Session) notify(n *jsonrpc.Request) {
	if s.hooks.Notification != nil {
		s.hooks.Notification(s, n)
	}
}
