package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge/internal/upstream"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// scripted is a Streamable HTTP MCP server written for the HTTP upstream's
// edge cases: each tool answers in one particular way.
type scripted struct {
	t     *testing.T
	limit int // the upstream's message limit, for "huge"

	mu        sync.Mutex
	sessions  int
	deleted   []string
	deletes   chan string // the session id of each DELETE, as it arrives
	resumeAt  time.Time   // when "resume" cut its stream
	resumeID  json.RawMessage
	lastEvent string // the Last-Event-ID of the resuming GET
	answers   chan json.RawMessage
	hangStart chan struct{} // the "hang" call's POST arrived
	hangGone  chan struct{} // the "hang" call's POST was abandoned by the client
	cancelled chan string   // requestIds of notifications/cancelled
}

func (s *scripted) sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		io.WriteString(w, e)
	}
	w.(http.Flusher).Flush()
}

func result(id json.RawMessage, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, id, text)
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	switch r.Method {
	case http.MethodDelete:
		s.mu.Lock()
		s.deleted = append(s.deleted, sid)
		s.mu.Unlock()
		s.deletes <- sid
		return
	case http.MethodGet:
		if r.Header.Get("Mcp-Protocol-Version") != "2025-11-25" || sid == "" {
			s.t.Errorf("GET without session headers: %v", r.Header)
		}
		s.mu.Lock()
		id, at := s.resumeID, s.resumeAt
		if le := r.Header.Get("Last-Event-Id"); le != "" {
			s.lastEvent = le
		}
		s.mu.Unlock()
		if r.Header.Get("Last-Event-Id") == "e1" {
			if d := time.Since(at); d < 100*time.Millisecond {
				s.t.Errorf("resumed after %v, before the 100 ms retry", d)
			}
			s.sse(w, "id: e2\ndata: "+result(id, "resumed")+"\n\n")
			return
		}
		s.sse(w, ": standalone stream\n\n") // the standalone stream: stays open
		<-r.Context().Done()
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
		Result json.RawMessage `json:"result"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &m); err != nil {
		s.t.Errorf("POST body %q: %v", body, err)
	}
	if m.Method == "initialize" {
		s.mu.Lock()
		s.sessions++
		n := s.sessions
		s.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", fmt.Sprintf("session-%d", n))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}}`, m.ID)
		return
	}
	if sid == "" || r.Header.Get("Mcp-Protocol-Version") != "2025-11-25" {
		s.t.Errorf("%s without session id or protocol version: %v", m.Method, r.Header)
	}
	if m.ID == nil || m.Method == "" { // a notification or a response
		if m.Method == "" {
			s.answers <- body
		}
		if m.Method == "notifications/cancelled" {
			var p struct {
				Params struct {
					RequestID json.RawMessage `json:"requestId"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &p)
			s.cancelled <- string(p.Params.RequestID)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch m.Params.Name {
	case "json":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, result(m.ID, "plain JSON"))
	case "unauthorized":
		http.Error(w, "no token", http.StatusUnauthorized)
	case "rpcerror":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"bad arguments"}}`)
	case "resume":
		s.mu.Lock()
		s.resumeID = m.ID
		s.mu.Unlock()
		s.sse(w, "id: e1\nretry: 100\ndata: \n\n")
		s.mu.Lock()
		s.resumeAt = time.Now()
		s.mu.Unlock()
	case "noid":
		s.sse(w, "data: \n\n")
	case "huge":
		s.sse(w, "data: "+strings.Repeat("x", s.limit+1)+"\n\n")
	case "multiline":
		// One message split over data lines, CRLF line ends, a comment,
		// and an event of another type first.
		s.sse(w, "event: other\r\ndata: ignored\r\n\r\n: comment\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":"+string(m.ID)+",\"result\":{\"content\":[]}}\r\n\r\n")
	case "ask":
		// A request of the server's own on the call's stream; the answer
		// comes back in a POST and goes into the result.
		s.sse(w, `data: {"jsonrpc":"2.0","id":"srv-1","method":"roots/list"}`+"\n\n")
		select {
		case a := <-s.answers:
			io.WriteString(w, "data: "+result(m.ID, string(a))+"\n\n")
		case <-time.After(10 * time.Second):
			s.t.Error("no answer to roots/list")
		}
	case "hang": // never answers; waits for the client to give up
		s.sse(w, ": waiting\n\n")
		close(s.hangStart)
		<-r.Context().Done()
		close(s.hangGone)
	case "expire":
		http.Error(w, "session gone", http.StatusNotFound)
	default:
		s.t.Errorf("unknown tool %q", m.Params.Name)
	}
}

// TestHTTPUpstreamEdgeCases: the HTTP upstream's own Streamable HTTP client
// against a server that answers in every way the transport allows, and in
// some ways it does not; each failure is a clear JSON-RPC error for that
// request only, and an expired session ends only its own MCP-Flow session.
func TestHTTPUpstreamEdgeCases(t *testing.T) {
	const limit = 1 << 20
	sc := &scripted{t: t, limit: limit, answers: make(chan json.RawMessage, 1),
		deletes: make(chan string, 4), hangStart: make(chan struct{}), hangGone: make(chan struct{}), cancelled: make(chan string, 1)}
	ts := httptest.NewServer(sc)
	t.Cleanup(ts.Close)
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	upstream.NewHTTPUpstream(upstream.HTTPUpstreamConfig{Endpoint: ts.URL, MaxMessage: limit, Logger: flowtest.Quiet}).Configure(&cfg)
	srv := flowtest.Serve(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	roots := flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		return map[string]any{"roots": []map[string]string{{"uri": "file:///work"}}}, nil
	})
	dial := func() *flow.Session {
		s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet, Handler: roots,
			Capabilities: json.RawMessage(`{"roots":{}}`)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s, other := dial(), dial()
	call := func(s *flow.Session, name string) (string, error) {
		r, err := s.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
		if err != nil {
			return "", err
		}
		return string(r.Result), nil
	}
	code := func(err error) jsonrpc.Code {
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			t.Fatalf("want a JSON-RPC error, got %v", err)
		}
		return je.Code
	}

	if res, err := call(s, "json"); err != nil || !strings.Contains(res, "plain JSON") {
		t.Errorf("json: %s, %v", res, err)
	}
	if res, err := call(s, "multiline"); err != nil || res != `{"content":[]}` {
		t.Errorf("multiline: %s, %v", res, err)
	}
	if _, err := call(s, "unauthorized"); code(err) != jsonrpc.CodeInternalError || !strings.Contains(err.Error(), "401") {
		t.Errorf("unauthorized: %v", err)
	}
	if _, err := call(s, "rpcerror"); code(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "bad arguments") {
		t.Errorf("rpcerror: %v", err)
	}
	if res, err := call(s, "resume"); err != nil || !strings.Contains(res, "resumed") {
		t.Errorf("resume: %s, %v", res, err)
	}
	sc.mu.Lock()
	if sc.lastEvent != "e1" {
		t.Errorf("resumed with Last-Event-ID %q, want e1", sc.lastEvent)
	}
	sc.mu.Unlock()
	if _, err := call(s, "noid"); code(err) != jsonrpc.CodeInternalError || !strings.Contains(err.Error(), "cannot be resumed") {
		t.Errorf("noid: %v", err)
	}
	if _, err := call(s, "huge"); code(err) != jsonrpc.CodeInternalError || !strings.Contains(err.Error(), "message limit") {
		t.Errorf("huge: %v", err)
	}
	if res, err := call(s, "ask"); err != nil || !strings.Contains(res, `srv-1`) || !strings.Contains(res, "file:///work") {
		t.Errorf("ask: %s, %v", res, err)
	}
	// A cancelled call: the upstream gets notifications/cancelled for it,
	// and its POST and stream are abandoned rather than held open.
	// The call is cancelled once its POST has reached the server.
	cctx, ccancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-sc.hangStart:
		case <-cctx.Done():
		}
		ccancel()
	}()
	if _, err := s.Call(cctx, "tools/call", map[string]any{"name": "hang", "arguments": map[string]any{}}); err == nil {
		t.Error("hang answered")
	}
	ccancel()
	select {
	case id := <-sc.cancelled:
		if id == "" || id == "null" {
			t.Errorf("notifications/cancelled for %q", id)
		}
	case <-time.After(5 * time.Second):
		t.Error("no notifications/cancelled upstream")
	}
	select {
	case <-sc.hangGone:
	case <-time.After(5 * time.Second):
		t.Error("the cancelled call's POST is still open")
	}
	// The session is still good after all that.
	if res, err := call(s, "json"); err != nil || !strings.Contains(res, "plain JSON") {
		t.Errorf("json after the errors: %s, %v", res, err)
	}

	// An expired HTTP session fails the call and ends that MCP-Flow
	// session; the other one goes on.
	if _, err := call(s, "expire"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expire: %v", err)
	}
	select {
	case <-s.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the session outlived its upstream")
	}
	if res, err := call(other, "json"); err != nil || !strings.Contains(res, "plain JSON") {
		t.Errorf("the other session: %s, %v", res, err)
	}

	// Closing a session DELETEs its HTTP session; the expired one had
	// nothing left to delete.
	other.Close()
	select {
	case sid := <-sc.deletes:
		sc.mu.Lock()
		d := append([]string(nil), sc.deleted...)
		sc.mu.Unlock()
		if sid != "session-2" || len(d) != 1 {
			t.Fatalf("DELETEs: %v, want session-2's only", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no DELETE for session-2 in 10 s after its MCP-Flow session closed")
	}
}

// TestUpstreamEnds: when the upstream's output ends (the process died), the
// request waiting for it fails with a clear error and the MCP-Flow session
// is shut down, instead of hanging.
func TestUpstreamEnds(t *testing.T) {
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	upstream.NewPipeUpstream(scriptedPipe(""), 0, flowtest.Quiet).Configure(&cfg) // dies at the first call
	srv := flowtest.Serve(t, cfg)
	ctx, s := flowtest.Dial(t, srv)
	_, err := s.Call(ctx, "tools/call", map[string]any{"name": "x"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, "upstream MCP server ended") {
		t.Fatalf("call: %v", err)
	}
	select {
	case <-s.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the session outlived its upstream")
	}
}
