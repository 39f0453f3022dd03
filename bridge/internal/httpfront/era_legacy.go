package httpfront

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The 2024-11-05 HTTP+SSE transport, served for backwards compatibility
// (2025-11-25 transports).

// legacyStream serves a client of the 2024-11-05 HTTP+SSE transport, for
// backwards compatibility (2025-11-25 transports): its GET opens the
// session's one SSE stream, whose first event, "endpoint", names where to
// POST; every answer and server message comes on this stream, and the
// session ends with it. Until its initialize succeeds the stream counts
// against MaxUninitialized, not MaxSessions, and lasts at most InitTimeout.
func (h *HTTPFront) legacyStream(w http.ResponseWriter, r *http.Request) {
	s := h.newSession(true, r)
	if !h.register(s) {
		h.discard(s)
		h.tooMany(w, fmt.Sprintf("too many HTTP+SSE streams before initialize (%d, MaxUninitialized)", h.cfg.MaxUninitialized))
		return
	}
	defer h.end(s, "HTTP+SSE stream closed")
	defer s.enter()()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "event: endpoint\ndata: %s?session=%s\n\n", r.URL.Path, s.id)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	switch _, err := s.standalone.follow(r.Context(), w, 0, h.cfg.WriteTimeout); {
	case errors.Is(err, errEventsLost):
		h.log.Warn("HTTP+SSE stream cut", "err", err)
	case err != nil:
		h.log.Debug("SSE stream cut", "err", err)
	}
}

// legacyPost takes a message of a 2024-11-05 HTTP+SSE client: 202, and the
// answer comes on the session's stream.
func (h *HTTPFront) legacyPost(w http.ResponseWriter, r *http.Request) {
	s := h.lookup(r.URL.Query().Get("session"))
	if s == nil || !s.legacy || !h.owns(s, r) {
		http.Error(w, "unknown or ended session", http.StatusNotFound)
		return
	}
	if h.isClosing() {
		h.tooMany(w, "the bridge is shutting down")
		return
	}
	defer s.enter()()
	body, release, ok := h.readBody(w, r, h.cfg.MaxBody, s.bodies)
	if !ok {
		return
	}
	p, msgs, ok := parse(w, body)
	if !ok {
		release()
		return
	}
	// The body's bytes stay charged until the POST's requests are answered
	// (spec §8.3); a POST of notifications only is done once dispatched.
	hold := &bodyHold{release: release}
	defer func() {
		s.mu.Lock()
		hold.unlessLocked()
		s.mu.Unlock()
	}()
	if v := s.core.Version(); p.Batch && !core.BatchesAllowed(v) {
		writeJSON(w, http.StatusBadRequest, core.BatchError(v))
		return
	}
	if !p.Batch && len(msgs) == 1 && isRequest(msgs[0], protocol.MethodInitialize) {
		h.legacyInitialize(w, r, s, msgs[0].(*jsonrpc.Request))
		return
	}
	s.mu.Lock()
	if dup := s.duplicateLocked(msgs); dup != nil {
		s.mu.Unlock()
		duplicate(w, dup)
		return
	}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			hold.pending++
			s.registerLocked(req.ID.Raw(), &httpCall{hold: hold}, req.Params) // answered on the standalone stream
		}
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	s.dispatch(r, msgs)
}

// legacyInitialize answers a legacy session's initialize on its stream; a
// successful one makes the stream count as a session (MaxSessions).
func (h *HTTPFront) legacyInitialize(w http.ResponseWriter, r *http.Request, s *httpSession, m *jsonrpc.Request) {
	if h.full() {
		h.tooManySessions(w)
		return
	}
	ch := make(chan *jsonrpc.Response, 1)
	s.mu.Lock()
	if dup := s.duplicateLocked([]jsonrpc.Message{m}); dup != nil {
		s.mu.Unlock()
		duplicate(w, dup)
		return
	}
	s.registerLocked(m.ID.Raw(), &httpCall{init: ch}, nil)
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	s.dispatch(r, []jsonrpc.Message{m})
	res := <-ch // the core answers every initialize
	if res.Error == nil && !h.promote(s) {
		res = jsonrpc.NewErrorResponse(res.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, fmt.Sprintf("too many sessions (%d open)", h.cfg.MaxSessions)))
		defer h.end(s, "too many sessions")
	}
	s.add(s.standalone, res, nil)
}
