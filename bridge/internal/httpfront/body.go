package httpfront

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// A POST's body: read within the bodies budgets, decoded, checked for ids
// already in flight; and the front's JSON answers.

// readBody reads a POST's body of at most limit bytes, charged to budget
// (a client's bodies budget under MaxBodiesInFlight, or that alone); it
// answers the client itself (413, 503, 400) when it cannot. release gives
// the body's bytes back: call it once the body's requests are answered
// (spec §8.3: a decoded request counts until then).
func (h *HTTPFront) readBody(w http.ResponseWriter, r *http.Request, limit int, budget *heldBudget) (body []byte, release func(), ok bool) {
	if r.ContentLength > int64(limit) {
		http.Error(w, fmt.Sprintf("body over %d bytes", limit), http.StatusRequestEntityTooLarge)
		return nil, nil, false
	}
	reserved := 0
	release = sync.OnceFunc(func() { budget.credit(reserved) })
	reserve := func(n int) bool {
		if !budget.take(n) {
			return false
		}
		reserved += n
		return true
	}
	busy := func() {
		release()
		why := fmt.Sprintf("request bodies in flight over %d bytes (MaxBodiesInFlight)", h.cfg.MaxBodiesInFlight)
		if budget != h.bodies {
			why = fmt.Sprintf("request bodies in flight over %d bytes for this client (MaxClientBodies) or %d in all (MaxBodiesInFlight)", h.cfg.MaxClientBodies, h.cfg.MaxBodiesInFlight)
		}
		h.tooMany(w, why)
	}
	size := 32 << 10
	if r.ContentLength >= 0 {
		size = int(r.ContentLength) + 1 // room to see the end
	}
	size = min(size, limit+1)
	if !reserve(size) {
		busy()
		return nil, nil, false
	}
	body = make([]byte, 0, size)
	for {
		if len(body) == cap(body) {
			if len(body) > limit {
				release()
				http.Error(w, fmt.Sprintf("body over %d bytes", limit), http.StatusRequestEntityTooLarge)
				return nil, nil, false
			}
			grow := min(cap(body), limit+1-cap(body))
			if !reserve(grow) {
				busy()
				return nil, nil, false
			}
			body = slices.Grow(body, grow)
			if extra := cap(body) - reserved; extra > 0 { // what append rounded up; may pass the cap by that
				budget.force(extra)
				reserved += extra
			}
		}
		n, err := r.Body.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			release()
			http.Error(w, "unreadable body: "+err.Error(), http.StatusBadRequest)
			return nil, nil, false
		}
	}
	if len(body) > limit {
		release()
		http.Error(w, fmt.Sprintf("body over %d bytes", limit), http.StatusRequestEntityTooLarge)
		return nil, nil, false
	}
	return body, release, true
}

// readMessages reads a POST's body within limit (readBody) and decodes it
// (parse); it answers the client itself when it cannot. release gives the
// body's bytes back to MaxBodiesInFlight.
func (h *HTTPFront) readMessages(w http.ResponseWriter, r *http.Request, limit int, budget *heldBudget) (p jsonrpc.Payload, msgs []jsonrpc.Message, release func(), ok bool) {
	body, release, ok := h.readBody(w, r, limit, budget)
	if !ok {
		return p, nil, nil, false
	}
	if p, msgs, ok = parse(w, body); !ok {
		release()
		return p, nil, nil, false
	}
	return p, msgs, release, true
}

// parse decodes a POST's JSON-RPC payload; it answers the client itself
// (400) when it is not valid JSON-RPC.
func parse(w http.ResponseWriter, body []byte) (jsonrpc.Payload, []jsonrpc.Message, bool) {
	p, err := codec.Default(codec.JSON).Decode(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeParseError, err.Error())))
		return jsonrpc.Payload{}, nil, false
	}
	msgs, replies := jsonrpc.Validate(p)
	if len(replies) > 0 {
		writeJSON(w, http.StatusBadRequest, replies[0])
		return jsonrpc.Payload{}, nil, false
	}
	return p, msgs, true
}

// duplicateLocked returns the first request of msgs whose id is in flight
// on the session or repeated in msgs (nil: none). s.mu must be held.
func (s *httpSession) duplicateLocked(msgs []jsonrpc.Message) *jsonrpc.Request {
	seen := map[string]bool{}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			id := req.ID.Raw()
			if s.calls[id] != nil || seen[id] {
				return req
			}
			seen[id] = true
		}
	}
	return nil
}

// duplicate answers a POST that reuses a request id in flight: 400 and a
// -32600 error for that id; nothing in the POST is processed.
func duplicate(w http.ResponseWriter, req *jsonrpc.Request) {
	writeJSON(w, http.StatusBadRequest, jsonrpc.NewErrorResponse(req.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest,
		"request id "+req.ID.String()+" is already in flight in this session (JSON-RPC 2.0: ids are unique among requests in flight)")))
}

func isRequest(m jsonrpc.Message, method string) bool {
	r, ok := m.(*jsonrpc.Request)
	return ok && r.IsCall() && r.Method == method
}

// acceptsBoth reports whether a POST's Accept lists both answers a
// Streamable HTTP client must take (every MCP revision's transports).
func acceptsBoth(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && strings.Contains(accept, "text/event-stream")
}

func writeJSON(w http.ResponseWriter, status int, m jsonrpc.Message) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.AppendJSON(nil, m))
}
