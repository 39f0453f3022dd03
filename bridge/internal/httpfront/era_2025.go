package httpfront

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The 2025 Streamable HTTP sessions (MCP 2025-03-26 to 2025-11-25
// transports): initialize opens a session (MCP-Session-Id), each POST's
// requests are answered on an SSE stream of its own, the GET stream carries
// the rest, and Last-Event-ID resumes a stream.

// session finds the session a request names in MCP-Session-Id, before its
// body is read; it answers the client itself (400, 404) when there is none.
func (h *HTTPFront) session(w http.ResponseWriter, r *http.Request) *httpSession {
	id := r.Header.Get("MCP-Session-Id")
	if id == "" {
		http.Error(w, "missing MCP-Session-Id", http.StatusBadRequest)
		return nil
	}
	s := h.lookup(id)
	if s == nil || s.legacy || !h.owns(s, r) { // an HTTP+SSE session has no Streamable HTTP id; another subject's is none of r's
		http.Error(w, "unknown or ended session", http.StatusNotFound)
		return nil
	}
	return s
}

// primingSince is the first MCP version whose SSE streams start with a
// priming event (2025-11-25 transports).
const primingSince = "2025-11-25"

func (h *HTTPFront) post(w http.ResponseWriter, r *http.Request) {
	if !acceptsBoth(r) {
		http.Error(w, "Accept must list application/json and text/event-stream", http.StatusNotAcceptable)
		return
	}
	// The session is found before the body is read: a POST for no session
	// costs nothing; one without a session id can only be an initialize.
	var s *httpSession
	limit, budget := h.cfg.MaxInitBody, h.bodies
	if r.Header.Get("MCP-Session-Id") != "" {
		if s = h.session(w, r); s == nil {
			return
		}
		limit, budget = h.cfg.MaxBody, s.bodies
	}
	if h.isClosing() {
		h.tooMany(w, "the bridge is shutting down")
		return
	}
	p, msgs, release, ok := h.readMessages(w, r, limit, budget)
	if !ok {
		return
	}
	defer func() { release() }()
	if !p.Batch && len(msgs) == 1 && isRequest(msgs[0], protocol.MethodInitialize) {
		h.initialize(w, r, msgs[0].(*jsonrpc.Request))
		return
	}
	if s == nil {
		if req, ok := msgs[0].(*jsonrpc.Request); ok && !p.Batch && req.IsCall() && flow.IsStatelessRequest(req) {
			// A 2026-07-28 request without its MCP-Protocol-Version header.
			writeJSON(w, http.StatusBadRequest, jsonrpc.NewErrorResponse(req.ID, jsonrpc.NewError(protocol.CodeHeaderMismatch,
				"the MCP-Protocol-Version header is missing (a request whose _meta names "+protocol.MCP20260728+" must carry it)")))
			return
		}
		http.Error(w, "missing MCP-Session-Id", http.StatusBadRequest)
		return
	}
	defer s.enter()()
	if v := s.core.Version(); p.Batch && !core.BatchesAllowed(v) {
		// 2025-03-26 allowed a batch in a POST; 2025-06-18 and later do not.
		writeJSON(w, http.StatusBadRequest, core.BatchError(v))
		return
	}
	// The requests of this POST are answered on its stream, which ends
	// once each is answered or cancelled; until then the stream counts as
	// activity and the body's bytes stay charged (the decoded requests are
	// held until answered).
	leave, held := s.enter(), release
	release = func() {}
	done := func() { leave(); held() }
	post := &postStream{done: done}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		done()
		http.Error(w, "unknown or ended session", http.StatusNotFound)
		return
	}
	if dup := s.duplicateLocked(msgs); dup != nil {
		s.mu.Unlock()
		done()
		duplicate(w, dup)
		return
	}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if post.sseStream == nil {
				s.nextStream++
				post.sseStream = newSSEStream(s.nextStream, s.budget)
				s.streams[post.id] = post.sseStream
			}
			s.registerLocked(req.ID.Raw(), &httpCall{post: post}, req.Params)
		}
	}
	s.mu.Unlock()
	if post.sseStream == nil {
		done()
		s.dispatch(r, msgs)
		w.WriteHeader(http.StatusAccepted) // notifications and responses only
		return
	}
	s.dispatch(r, msgs)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if s.core.Version() >= primingSince {
		post.prime(w, 0)
	}
	// The stream's events are kept whether or not the client stays: it
	// may come back with Last-Event-ID.
	if _, err := post.follow(r.Context(), w, 0, h.cfg.WriteTimeout); err != nil {
		h.log.Debug("SSE stream cut", "err", err)
	}
}

// initialize opens a Streamable HTTP session with the client's initialize:
// its id comes back in MCP-Session-Id with a successful result.
func (h *HTTPFront) initialize(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) {
	if h.full() {
		h.tooManySessions(w)
		return
	}
	s := h.newSession(false, r)
	ch := make(chan *jsonrpc.Response, 1)
	s.mu.Lock()
	s.registerLocked(m.ID.Raw(), &httpCall{init: ch}, nil)
	s.mu.Unlock()
	s.core.Dispatch(context.WithoutCancel(r.Context()), m)
	res := <-ch // the core answers every initialize
	if res.Error != nil {
		h.discard(s)
		writeJSON(w, http.StatusOK, res)
		return
	}
	if !h.register(s) {
		h.discard(s)
		h.tooManySessions(w)
		return
	}
	if s.core.Session() == nil && !s.core.Reconnects() { // lost before it was registered
		h.end(s, "its MCP-Flow session ended during initialize")
	}
	w.Header().Set("MCP-Session-Id", s.id)
	writeJSON(w, http.StatusOK, res)
}

func (h *HTTPFront) getStream(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		http.Error(w, "Accept must list text/event-stream", http.StatusNotAcceptable)
		return
	}
	s := h.session(w, r)
	if s == nil {
		return
	}
	defer s.enter()()
	// Resumption: Last-Event-ID "<stream>.<seq>" replays that stream only,
	// from after that event.
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		sid, seq, ok := parseEventID(last)
		s.mu.Lock()
		st := s.streams[sid]
		s.mu.Unlock()
		if !ok || st == nil || !st.available(seq) {
			http.Error(w, "unknown Last-Event-ID, or its events are no longer held", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if _, err := st.follow(r.Context(), w, seq, h.cfg.WriteTimeout); err != nil {
			h.log.Debug("SSE stream cut", "err", err)
		}
		return
	}
	s.mu.Lock()
	for s.getOpen {
		// A client opens a GET stream again when it lost the one it had
		// (a reconnect after a network error), and the front may not have
		// seen that one end yet. The newest GET takes stream 0 over: the
		// old one is ended (its client gets nothing more on it) and this
		// one goes on from where it stopped. A 409 here failed the
		// TypeScript SDK v2 client's reconnection ("Failed to open SSE
		// stream"). MCP 2025-11-25 lets a client hold several streams; the
		// front sends each message on one of them (spec §10).
		end, done := s.getEnd, s.getDone
		s.mu.Unlock()
		end()
		select {
		case <-done:
		case <-r.Context().Done():
			return
		}
		s.mu.Lock()
	}
	ctx, end := context.WithCancel(r.Context())
	defer end()
	done := make(chan struct{})
	defer close(done)
	s.getOpen, s.getEnd, s.getDone = true, end, done
	// From where the last GET stream stopped, or, if that has left the
	// replay window (a client that fell behind was cut off), from the
	// oldest event still held.
	from := max(s.delivered, s.standalone.first())
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 1000\n\n")
	if s.core.Version() >= primingSince {
		s.standalone.prime(w, from)
	} else if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	reached, err := s.standalone.follow(ctx, w, from, h.cfg.WriteTimeout)
	switch {
	case errors.Is(err, errEventsLost):
		// The client fell behind the replay window: what it missed is
		// gone, so the stream ends rather than skip events silently.
		h.log.Warn("standalone SSE stream cut", "err", err)
	case err != nil:
		h.log.Debug("SSE stream cut", "err", err)
	}
	s.mu.Lock()
	s.getOpen, s.getEnd, s.getDone = false, nil, nil
	s.delivered = max(s.delivered, reached)
	s.mu.Unlock()
}
