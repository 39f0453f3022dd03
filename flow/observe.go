package flow

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/quic-go/webtransport-go"
)

// Event is one thing a session, a server or a bridge did, for an operator:
// Hooks.Observe receives it (package metrics counts it for Prometheus), and
// at debug level the same event is one log line. Only the fields its Kind
// names are set; no token and no tool argument is ever in an Event.
type Event struct {
	Kind EventKind
	// Server is true on the server's side of a session (or for a server's
	// refusal), false on a client's.
	Server bool
	// Method is the request's method (EventRequest, EventCancel) or, for an
	// execution stream (EventStreamOpen, EventStream), its request's method
	// where known.
	Method string
	// Outcome is "ok", "error" (a JSON-RPC error answer; Code is its code),
	// "cancelled" (EventRequest); "ok" or "reset" (Code: the reset code,
	// as a JSON-RPC code, spec §5.4) for EventStream; "sent", "received",
	// "dropped" or "superseded" for EventDatagram; the refusal's reason for
	// EventRefused: "origin", "host", "sessions", "handshakes", "auth",
	// "shutting-down", "upgrade", "initialize" ("host" is the HTTP front's,
	// package bridge; "auth" is a refused bearer token, spec §9.1, the
	// server's on a CONNECT and the front's on an HTTP request);
	// "exit" for EventUpstreamExit.
	Outcome string
	Code    int64
	// Duration is a request's time from its arrival to its answer (or, for a
	// call of this side's, from sending it to Call's return; EventRequest)
	// or a session's life from its CONNECT or dial (EventSessionClose).
	Duration time.Duration
	// Bytes is an execution stream's payload (EventStream) or one control
	// frame's size with its 4-byte prefix (EventControl).
	Bytes int64
	// Inbound is true for what this side received (EventStreamOpen,
	// EventStream, EventControl, EventDatagram), and for a request or
	// cancel of the peer's (EventRequest: one this side's Handler answered;
	// EventCancel: one the peer sent); false for this side's own calls and
	// cancels.
	Inbound bool
	// Encoding is the control stream's encoding (EventControl: the frame's;
	// EventSessionOpen: the one negotiated).
	Encoding codec.Name
	// Channel is a datagram's channel (spec §6.1: 1 progress, 2 audio, 3 log).
	Channel uint8
	// CloseCode is a session's close code (spec §8.2; EventSessionClose, and
	// EventRefused for a session that ended before READY).
	CloseCode webtransport.SessionErrorCode
	// Reason is words for people: a session's close reason, a refusal's.
	Reason string
	// ID is the request's id as JSON text (EventRequest, EventCancel,
	// EventStreamOpen, EventStream), for logs only: metrics never label by it.
	ID string
	// Tag is an execution stream's tag (EventStreamOpen, EventStream).
	Tag uint32
}

// EventKind says what an Event is about.
type EventKind uint8

const (
	// EventSessionOpen: a session became READY (spec §2).
	EventSessionOpen EventKind = iota + 1
	// EventSessionClose: a session ended (CloseCode, Reason, Duration). Only
	// a session that had an EventSessionOpen gets one, exactly one: a session
	// that ends before READY is no session an operator saw open (a server
	// that refused it says so with EventRefused).
	EventSessionClose
	// EventRequest: a request was answered (Method, Outcome, Code, Duration):
	// one of the peer's that this side's Handler answered or the session
	// refused (Inbound; not ping, initialize, $/hello nor server/discover,
	// which the session answers itself), or one of this side's calls that was
	// sent (Call returned). "cancelled" is a request cancelled by either side
	// or cut off by the session's end; Code is then -32800 unless the answer
	// that said so had another.
	EventRequest
	// EventCancel: a request was cancelled ($/cancel or notifications/
	// cancelled, spec §7.1), sent or received (Inbound). A received one counts
	// when it cancelled a request in flight, not when it came too late.
	EventCancel
	// EventStream: an execution stream ended (Inbound, Bytes, Outcome, Code).
	EventStream
	// EventDatagram: a datagram was sent, received, dropped (no room, or
	// unreadable) or superseded by a newer one before it left. Received: each
	// datagram read is "received" or "dropped" (unreadable, datagrams off, a
	// progress value not above the last one delivered). Sent: "sent" when
	// the connection took it; "superseded" for a progress update replaced in
	// its slot; "dropped" for a SendDatagram that failed and a progress update
	// left in its slot when its request ended without an answer (or given
	// after it). What goes on the control stream instead is no datagram
	// event: a progress or log datagram that does not fit, and the newest
	// progress update of a request, which goes there before its result.
	EventDatagram
	// EventControl: a control frame was written or read (Inbound, Bytes,
	// Encoding).
	EventControl
	// EventRefused: a server refused a CONNECT or a session before it was
	// READY (Outcome: why): "origin" (HTTP 403), "auth" (ServerConfig.Auth
	// refused its access token: 400, 401 or 403, spec §9.1), "sessions" (MaxSessions,
	// 503), "shutting-down" (a CONNECT during Shutdown or Close, 503, or a
	// session shut down before its control stream), "upgrade" (a CONNECT that
	// was no WebTransport upgrade, 400), "handshakes" (no control stream or
	// initialize within HandshakeTimeout), "initialize" (its initialize or
	// $/hello was answered with an error and it never became READY).
	EventRefused
	// EventUpstreamStart: a bridge started an upstream process; Outcome
	// "start" or "restart" (package bridge).
	EventUpstreamStart
	// EventHTTPRequest: the Streamable HTTP front answered a request
	// (Method: the HTTP method; Outcome: the era, "2025" or "2026-07-28";
	// Code: the HTTP status).
	EventHTTPRequest
	// EventStreamOpen: an execution stream opened (Inbound, Method, ID,
	// Tag): on the server when its StreamWriter's header is written, on the
	// client when a header arrives and is taken for a call of its own. Each
	// is followed by exactly one EventStream on the same side: when the
	// stream ends, or, for one still open when the session ends, at its end
	// (Outcome "reset", Code -32800). A stream whose $/streamError came
	// before its header ends unopened; its EventStreamOpen then comes just
	// before its EventStream, so that opens and ends always pair.
	EventStreamOpen
	// EventUpstreamExit: an upstream process that a bridge started was
	// reaped, once per EventUpstreamStart (Outcome "exit"; Code: its exit
	// status, -1 for one ended by a signal; package bridge).
	EventUpstreamExit
)

var eventNames = [...]string{"", "session-open", "session-close", "request", "cancel", "stream", "datagram", "control", "refused", "upstream-start", "http-request", "stream-open", "upstream-exit"}

// String names the kind as log lines and tests do.
func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "event-" + itoa(uint32(k))
}

// Every event of a session leaves through Session.observe, and every
// refusal of a server's through Server.observe: Hooks.Observe gets it, and
// the debug log gets the same event as one line (logEvent), so a count and
// a log line never disagree. Neither blocks (Hooks.Observe must not), and
// with no Observe hook and no debug logging an event costs a call and two
// nil or level checks: no clock read (Session.now), no allocation.

// observe logs e (logEvent) and hands it to the session's Hooks.Observe:
// an event observed has been logged.
func (s *Session) observe(e Event) {
	e.Server = s.server
	logEvent(s.log, e)
	if f := s.hooks.Observe; f != nil {
		f(e)
	}
}

// observe hands a refusal to ServerConfig.Hooks.Observe and logs it: no
// session exists to do so.
func (srv *Server) observe(e Event) {
	e.Server = true
	logEvent(srv.log, e)
	if f := srv.cfg.Hooks.Observe; f != nil {
		f(e)
	}
}

// observing reports whether anything takes s's events: Hooks.Observe or a
// debug log.
func (s *Session) observing() bool {
	return s.hooks.Observe != nil || s.log.Enabled(context.Background(), slog.LevelDebug)
}

// now is the time a Duration of an event counts from: the zero time when
// nothing takes s's events, so that nobody pays for a clock read.
func (s *Session) now() time.Time {
	if s.observing() {
		return time.Now()
	}
	return time.Time{}
}

// since is the Duration from t (0 from the zero time).
func since(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return time.Since(t)
}

// logLevel is the level e is logged at, and whether it is logged at all: a
// request, a cancel, an execution stream's end and a session's end at
// debug; a refusal at warn when the operator may have to act (an origin not
// allowed, MaxSessions reached), else at debug. Control frames, datagrams
// and session and execution stream openings are too many or said elsewhere:
// counted, never logged.
func (e *Event) logLevel() (slog.Level, bool) {
	switch e.Kind {
	case EventRequest, EventCancel, EventStream, EventSessionClose:
		return slog.LevelDebug, true
	case EventRefused:
		if e.Outcome == "origin" || e.Outcome == "sessions" {
			return slog.LevelWarn, true
		}
		return slog.LevelDebug, true
	}
	return 0, false
}

// logEvent writes e's log line if l takes its level. Only ids, method
// names, tags, codes, sizes and times go in: never params, results or
// headers.
func logEvent(l *slog.Logger, e Event) {
	level, ok := e.logLevel()
	if !ok {
		return
	}
	ctx := context.Background()
	if !l.Enabled(ctx, level) {
		return
	}
	side := "client"
	if e.Server {
		side = "server"
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs, slog.String("side", side))
	msg := e.Kind.String()
	switch e.Kind {
	case EventRequest:
		dir := "call"
		if e.Inbound {
			dir = "handled"
		}
		attrs = append(attrs, slog.String("method", e.Method), slog.String("id", e.ID), slog.String("dir", dir),
			slog.String("outcome", e.Outcome), slog.Int64("code", e.Code), slog.Duration("duration", e.Duration))
	case EventCancel:
		dir := "sent"
		if e.Inbound {
			dir = "received"
		}
		attrs = append(attrs, slog.String("method", e.Method), slog.String("id", e.ID), slog.String("dir", dir))
	case EventStream:
		dir := "out"
		if e.Inbound {
			dir = "in"
		}
		attrs = append(attrs, slog.String("method", e.Method), slog.String("id", e.ID), slog.Uint64("tag", uint64(e.Tag)),
			slog.String("dir", dir), slog.Int64("bytes", e.Bytes), slog.String("outcome", e.Outcome), slog.Int64("code", e.Code))
	case EventSessionClose:
		msg = "session closed"
		attrs = append(attrs, slog.Uint64("code", uint64(e.CloseCode)), slog.String("words", CloseText(e.CloseCode)),
			slog.String("reason", e.Reason), slog.Duration("duration", e.Duration))
	case EventRefused:
		attrs = append(attrs, slog.String("outcome", e.Outcome), slog.String("reason", e.Reason))
	}
	l.LogAttrs(ctx, level, msg, attrs...)
}

// streamEvents pairs an execution stream's EventStreamOpen with its one
// EventStream, whoever ends it first: its writer or reader, a cancel, a
// refusal, or the session's end (Session.endLiveStreams). Both events go
// out under mu, so that the open never trails the end; an end that finds
// no open sends it first. With nothing observing (Session.observing) the
// flags change and no Event is made. The zero value is ready.
type streamEvents struct {
	mu     sync.Mutex
	opened bool
	ended  bool
}

// open emits the stream's EventStreamOpen (made by ev) unless it went out,
// or the stream ended, already.
func (p *streamEvents) open(s *Session, ev func() Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opened || p.ended {
		return
	}
	p.opened = true
	if s.observing() {
		s.observe(ev())
	}
}

// end emits the stream's EventStream (made by end), and before it its
// EventStreamOpen (made by open) if that has not gone out, unless it ended
// already.
func (p *streamEvents) end(s *Session, open, end func() Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.ended = true
	if !s.observing() { // nobody pays for the events' ids
		p.opened = true
		return
	}
	if !p.opened {
		p.opened = true
		s.observe(open())
	}
	s.observe(end())
}

// liveStream is an execution stream whose EventStreamOpen may have gone
// out and whose EventStream has not: Session.live holds it until it is
// settled, so that the session's end can end it (endAtClose).
type liveStream interface {
	endAtClose()
}

// trackStream records st as live, under s.mu. It reports false when the
// session has ended its live streams already: the caller ends st itself.
func (s *Session) trackStream(st liveStream) bool {
	if s.liveEnded {
		return false
	}
	if s.live == nil {
		s.live = map[liveStream]struct{}{}
	}
	s.live[st] = struct{}{}
	return true
}

// endLiveStreams emits, at the session's end, the EventStream of each
// execution stream still open ("reset", -32800: the session's end cut it
// off), so that no EventStreamOpen goes without its end; a writer or reader
// that ends it later sends no second one.
func (s *Session) endLiveStreams() {
	s.mu.Lock()
	s.liveEnded = true
	live := s.live
	s.live = nil
	s.mu.Unlock()
	for st := range live {
		st.endAtClose()
	}
}
