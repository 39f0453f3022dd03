package httpfront

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge/internal/core"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// The HTTP front's MCP 2026-07-28 path (spec §11.6): no initialize, no
// MCP-Session-Id, no GET stream; each POST carries one request with its own
// _meta, and its answer comes on that POST, as JSON when nothing precedes
// the response, else as an SSE stream of its own (progress, then the
// response). Closing that stream cancels the request ($/cancel). Each 2026
// client of the front (clientKey: the remote address, or
// HTTPConfig.ClientKey's answer) has a holder of its own: an httpSession
// never registered under an id, so no client can name it, with its own
// MCP-Flow session of that revision (so its own requests-in-flight limit
// on the server), its own offloaded streams and its own held-bytes and
// bodies budgets, under the front-wide ones (spec §11.6).
//
// This file is long because statelessPost is one request's whole life on
// its POST (body, holder, progress, a listen's events, the answer), kept in
// one function so that what each step may still send reads in order.

// statelessVersion reports whether v is an MCP revision of the stateless
// era.
func statelessVersion(v string) bool { return slices.Contains(protocol.MCPStatelessVersions(), v) }

// statelessFront is the front of the stateless holder's core: its answers
// go back to each POST directly (core.call), and progress through the
// call's own callback, so what the core emits by itself (a notification of
// the shared session's, which names no request) has no client to go to.
type statelessFront struct{ *httpSession }

func (f statelessFront) Emit(m jsonrpc.Message) {
	if r, ok := m.(*jsonrpc.Request); ok {
		f.front.log.Debug("a notification of the shared 2026-07-28 session names no request: dropped", "method", r.Method)
	}
}

func (f statelessFront) EmitBatch([]*jsonrpc.Response) {}

func (f statelessFront) EmitResult(jsonrpc.ID, *mcpjson.Splice) {}

// statelessHolder returns the holder of r's client (clientKey), making it
// on the client's first request, with activity marked on it (leave ends
// it) before its idle timer can see it idle. A new holder counts against
// MaxSessions: past it, nil and full; nil when the front is closing.
func (h *HTTPFront) statelessHolder(r *http.Request) (s *httpSession, leave func(), full bool) {
	key := h.clientKey(r)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return nil, nil, false
	}
	if s := h.stateless[key]; s != nil {
		s.cred.offer(authOf(r)) // the same subject and scopes (clientKey)
		return s, s.enter(), false
	}
	if h.openLocked() >= h.cfg.MaxSessions {
		return nil, nil, true
	}
	s = h.newSession(false, r)
	s.key = key
	s.core = core.New(s.stdio, statelessFront{s}, nil)
	s.core.SetStateless()
	h.stateless[key] = s
	s.mu.Lock()
	h.watchIdleLocked(s)
	s.mu.Unlock()
	return s, s.enter(), false
}

// mcpNameSource is the params member that Mcp-Name mirrors, by method
// (2026-07-28 transports, Standard Request Headers; the tasks rows as the
// TypeScript SDK v2 has them).
var mcpNameSource = map[string]string{
	"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
	"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId",
}

// headerMismatch checks a 2026-07-28 request's routing headers against its
// body (2026-07-28 transports, Server Validation): MCP-Protocol-Version
// equals _meta's version, Mcp-Method the method, Mcp-Name (Base64 sentinel
// decoded) params.name or params.uri. It returns why not, "" when they
// agree.
func headerMismatch(r *http.Request, m *jsonrpc.Request) string {
	hv := r.Header.Get("MCP-Protocol-Version")
	if hv == "" {
		return "the MCP-Protocol-Version header is missing"
	}
	if bv := flow.MetaVersion(m.Params); bv != hv {
		return fmt.Sprintf("Header mismatch: MCP-Protocol-Version header value %q does not match body value %q (_meta %s)", hv, bv, protocol.MetaProtocolVersion)
	}
	method, ok := r.Header["Mcp-Method"]
	if !ok {
		return "the Mcp-Method header is missing"
	}
	if len(method) != 1 || method[0] != m.Method {
		return fmt.Sprintf("Header mismatch: Mcp-Method header value %q does not match body value %q", strings.Join(method, ","), m.Method)
	}
	field, ok := mcpNameSource[m.Method]
	if !ok {
		return ""
	}
	// The params' members are read for their spans, nothing unmarshalled
	// (a tool's arguments may be large: TestParseCost).
	ms, _ := mcpjson.ReadObject(m.Params, nil)
	v := mcpjson.Find(ms, field)
	if v == nil {
		return "" // no string to mirror: nothing is required
	}
	s, isString := mcpjson.Unquote(v.Value)
	if !isString {
		return ""
	}
	want := string(s)
	names, ok := r.Header["Mcp-Name"]
	if !ok {
		return "the Mcp-Name header is missing (params." + field + " is " + fmt.Sprintf("%q", want) + ")"
	}
	got, err := mcpjson.DecodeHeaderValue(names[0])
	if len(names) != 1 || err != nil {
		return fmt.Sprintf("the Mcp-Name header value %q is malformed", strings.Join(names, ","))
	}
	if got != want {
		return fmt.Sprintf("Header mismatch: Mcp-Name header value %q does not match body value %q", got, want)
	}
	return ""
}

// statusOf is the HTTP status of a JSON answer to a 2026-07-28 request:
// 404 for -32601, 400 for the request errors the 2026-07-28 transports
// name, else 200.
func statusOf(r *jsonrpc.Response) int {
	if r.Error == nil {
		return http.StatusOK
	}
	switch r.Error.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, protocol.CodeUnsupportedProtocolVersion, protocol.CodeHeaderMismatch:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// payloadMethods are the 2026-07-28 methods whose body may need more than
// MaxInitBody (a tool's arguments): their POSTs are read within MaxBody,
// every other method's within MaxInitBody, as a 2025 POST without a session
// is. The choice is made from the Mcp-Method header before the body is
// read; headerMismatch then holds the body to it.
var payloadMethods = map[string]bool{"tools/call": true}

// maxQueuedEvents bounds the notifications of one subscriptions/listen
// waiting for its client to read them.
const maxQueuedEvents = 256

// statelessPost serves one POST of a 2026-07-28 client (its
// MCP-Protocol-Version names that era; an MCP-Session-Id is ignored). What
// it holds is its client's (statelessHolder): the body, charged until the
// answer is written, and the answer, charged to MaxSessionHeld until then.
func (h *HTTPFront) statelessPost(w http.ResponseWriter, r *http.Request) {
	if !acceptsBoth(r) {
		http.Error(w, "Accept must list application/json and text/event-stream", http.StatusNotAcceptable)
		return
	}
	s, leave, full := h.statelessHolder(r)
	switch {
	case full:
		h.tooManySessions(w)
		return
	case s == nil:
		h.tooMany(w, "the bridge is shutting down")
		return
	}
	defer leave()
	limit := h.cfg.MaxInitBody
	if payloadMethods[r.Header.Get("Mcp-Method")] {
		limit = h.cfg.MaxBody
	}
	p, msgs, release, ok := h.readMessages(w, r, limit, s.bodies)
	if !ok {
		return
	}
	defer release() // the decoded request is held until its answer is written
	if p.Batch {
		writeJSON(w, http.StatusBadRequest, core.BatchError(protocol.MCP20260728))
		return
	}
	m, _ := msgs[0].(*jsonrpc.Request)
	switch {
	case m == nil:
		writeJSON(w, http.StatusBadRequest, jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest,
			"a 2026-07-28 client sends no responses: the server asks for input with input_required results")))
		return
	case !m.IsCall():
		// 2026-07-28 defines no client notification over Streamable HTTP
		// (closing a stream cancels): accepted and dropped.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if why := headerMismatch(r, m); why != "" {
		writeJSON(w, http.StatusBadRequest, jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(protocol.CodeHeaderMismatch, why)))
		return
	}
	if resp := core.StatelessRefusal(m); resp != nil {
		writeJSON(w, statusOf(resp), resp)
		return
	}
	if why := s.paramMismatch(r.Context(), r, m); why != "" {
		writeJSON(w, http.StatusBadRequest, jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(protocol.CodeHeaderMismatch, why)))
		return
	}
	h.calls.Add(1)
	defer h.callsDone()

	// The client's progress token, if any, is replaced on the way by the
	// call's own (flow.WithProgress): tokens of different clients may be
	// equal, and each update must reach its own POST.
	// The callback runs on the session's reading goroutine and must not
	// wait for this client: an update not yet written when a newer one
	// comes is replaced by it (as progress datagrams are, spec §6.2), so a
	// POST holds one at most.
	var opts []flow.CallOption
	var (
		pmu     sync.Mutex
		pending jsonrpc.Message
	)
	wake := make(chan struct{}, 1)
	// A subscriptions/listen's notifications (spec §11.7) queue in order,
	// up to maxQueuedEvents: list changes are rare, and a client that
	// reads none of them for that long loses the newest.
	var (
		events []jsonrpc.Message
		ending <-chan struct{} // a listen's: the front's Shutdown or Close
	)
	next := func() jsonrpc.Message {
		pmu.Lock()
		defer pmu.Unlock()
		if len(events) > 0 {
			n := events[0]
			events = events[1:]
			return n
		}
		n := pending
		pending = nil
		return n
	}
	if m.Method == protocol.MethodListen {
		ending = h.listensEnd
		opts = append(opts, core.SubscriptionTo(m.ID, func(n *jsonrpc.Request) {
			pmu.Lock()
			full := len(events) >= maxQueuedEvents
			if !full {
				events = append(events, n)
			}
			pmu.Unlock()
			if full {
				h.log.Warn("a subscription's notification for a client that is not reading was dropped", "method", n.Method)
				return
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		}))
	}
	if tok := mcpjson.ProgressToken(m.Params); tok != nil {
		opts = append(opts, flow.WithProgress(func(pr flow.Progress) {
			pr.ProgressToken = tok
			n, err := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodProgress, pr)
			if err != nil {
				return
			}
			pmu.Lock()
			pending = n
			pmu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		}))
	}
	// A client that closes the stream (or its connection), or stops
	// reading it for WriteTimeout, cancels the request: the call sends
	// $/cancel and answers nothing.
	cctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	done := make(chan *core.Reply, 1)
	go func() {
		done <- s.core.Answer(context.WithoutCancel(r.Context()), cctx, m, opts...)
	}()
	out := answerWriter{w: w, rc: http.NewResponseController(w), s: s}
	sse := false
	send := func(msg jsonrpc.Message, e []byte) error { // e: msg encoded, or nil
		if e == nil {
			e = jsonrpc.AppendJSON(nil, msg)
		}
		if !sse {
			sse = true
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
		}
		_, resp := msg.(*jsonrpc.Response)
		return out.write(appendSSEData(nil, e), resp, msg)
	}
	for {
		select {
		case <-wake:
			for n := next(); n != nil; n = next() {
				if send(n, nil) != nil {
					cancel() // the client stopped reading: the request ends
					<-done
					return
				}
			}
		case <-ending:
			// The front shuts down: the listen ends as a server's does, with
			// the graceful result {_meta: {subscriptionId}} (spec §11.7),
			// after what came before it; the call upstream is cancelled.
			cancel()
			<-done
			for n := next(); n != nil; n = next() {
				if send(n, nil) != nil {
					return
				}
			}
			_ = send(core.ListenEnded(m.ID), nil)
			return
		case rep := <-done:
			if rep == nil { // cancelled: MCP sends no response
				return
			}
			// The result is written once, into the answer (core.Reply.Encode).
			resp, e := rep.Encode()
			s.learnFromAnswer(m, resp, e)
			for n := next(); n != nil; n = next() { // what came before the response goes first
				if send(n, nil) != nil {
					return
				}
			}
			if sse {
				_ = send(resp, e)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			status := statusOf(resp)
			if !s.budget.take(len(e)) { // told before the status is written
				e = heldRefusal(s, resp, len(e))
				status = http.StatusOK
				s.budget.force(len(e))
			} else {
				defer s.budget.credit(len(e))
			}
			resp = nil
			w.WriteHeader(status)
			_ = out.writeCharged(e)
			return
		}
	}
}

// answerWriter writes a 2026-07-28 POST's answer within the client's
// held-bytes budget (MaxSessionHeld of its holder, under MaxHeld) and
// WriteTimeout: the bytes are charged from when they are made until the
// client has taken them, and a client that takes nothing for WriteTimeout
// ends the response (spec §8.3).
type answerWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	s  *httpSession
}

// write charges e, writes it and credits it. Past the budget, a response
// (resp) is replaced by a -32603 error naming the cap, and a notification
// is dropped (nil error).
func (a answerWriter) write(e []byte, resp bool, m jsonrpc.Message) error {
	if !a.s.budget.take(len(e)) {
		if !resp {
			a.s.front.log.Warn("progress for a client that is not reading was dropped", "bytes", len(e))
			return nil
		}
		e = appendSSEData(nil, heldRefusal(a.s, m.(*jsonrpc.Response), len(e)))
		a.s.budget.force(len(e))
	}
	defer a.s.budget.credit(len(e))
	return a.writeCharged(e)
}

// writeCharged writes bytes already charged, within WriteTimeout, and
// flushes them.
func (a answerWriter) writeCharged(e []byte) error {
	_ = a.rc.SetWriteDeadline(time.Now().Add(a.s.front.cfg.WriteTimeout))
	_, err := a.w.Write(e)
	if err == nil {
		err = a.rc.Flush()
	}
	if err != nil {
		a.s.front.log.Debug("a 2026-07-28 answer was not taken", "err", err)
		return err
	}
	// No deadline left behind for the connection's next request.
	_ = a.rc.SetWriteDeadline(time.Time{})
	return nil
}

// appendSSEData appends one SSE event whose data is msg (one line: JSON
// has no raw newlines).
func appendSSEData(b, msg []byte) []byte {
	b = append(b, "data: "...)
	b = append(b, msg...)
	return append(b, "\n\n"...)
}
