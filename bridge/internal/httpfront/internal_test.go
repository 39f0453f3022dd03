package httpfront

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

func note(i int) jsonrpc.Message {
	n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, "notifications/message", map[string]any{"level": "info", "data": i})
	return n
}

// TestSSEReplayWindow: a stream holds its latest replayEvents events; a
// follower that asks for older ones gets errEventsLost, never a silent gap.
func TestSSEReplayWindow(t *testing.T) {
	st := newSSEStream(3, nil)
	for i := 1; i <= replayEvents+10; i++ {
		st.appendEvent(jsonrpc.AppendJSON(nil, note(i)))
	}
	st.finish()
	if st.first() != 10 || st.available(9) || !st.available(10) || !st.available(replayEvents+10) {
		t.Fatalf("window starts at %d", st.first())
	}
	if _, err := st.follow(context.Background(), httptest.NewRecorder(), 5, 0); !errors.Is(err, errEventsLost) {
		t.Fatalf("follow from a lost position: %v", err)
	}
	w := httptest.NewRecorder()
	reached, err := st.follow(context.Background(), w, 10, 0)
	if err != nil || reached != replayEvents+10 {
		t.Fatalf("follow: %d, %v", reached, err)
	}
	body := w.Body.String()
	if !strings.HasPrefix(body, "id: 3.11\ndata: ") || !strings.Contains(body, fmt.Sprintf(`"data":%d,`, replayEvents+10)) || strings.Count(body, "id: ") != replayEvents {
		t.Fatalf("replayed %d events, starting %q", strings.Count(body, "id: "), body[:40])
	}

	// The byte bound: big events push the old ones out, the newest stays.
	big := newSSEStream(4, nil)
	payload := strings.Repeat("x", replayBytes/3)
	for i := 0; i < 5; i++ {
		n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, "notifications/message", map[string]any{"data": payload})
		big.appendEvent(jsonrpc.AppendJSON(nil, n))
	}
	if big.bytes() > replayBytes || big.first() != 3 {
		t.Fatalf("%d bytes held from %d", big.bytes(), big.first())
	}
	huge := newSSEStream(5, nil)
	n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, "notifications/message", map[string]any{"data": strings.Repeat("y", replayBytes+1)})
	huge.appendEvent(jsonrpc.AppendJSON(nil, n))
	if !huge.available(0) {
		t.Fatal("the newest event must be held whatever its size")
	}
}

// TestFinishedStreamsBounded: a session keeps at most keepFinished
// finished POST streams (and keepFinishedBytes), dropping the oldest.
func TestFinishedStreamsBounded(t *testing.T) {
	s := &httpSession{streams: map[int]*sseStream{}}
	for i := 1; i <= keepFinished+5; i++ {
		st := newSSEStream(i, nil)
		st.appendEvent(jsonrpc.AppendJSON(nil, note(i)))
		st.finish()
		s.streams[i] = st
		s.retire(st)
	}
	if len(s.streams) != keepFinished || s.streams[5] != nil || s.streams[6] == nil {
		t.Fatalf("%d streams kept; stream 5 %v, 6 %v", len(s.streams), s.streams[5] != nil, s.streams[6] != nil)
	}
	payload := strings.Repeat("z", keepFinishedBytes/4)
	for i := 100; i < 106; i++ {
		st := newSSEStream(i, nil)
		n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, "notifications/message", map[string]any{"data": payload})
		st.appendEvent(jsonrpc.AppendJSON(nil, n))
		s.streams[i] = st
		s.retire(st)
	}
	total := 0
	for _, f := range s.finished {
		total += f.bytes()
	}
	if total > keepFinishedBytes || s.streams[105] == nil || s.streams[101] != nil {
		t.Fatalf("%d bytes in %d finished streams", total, len(s.finished))
	}
}

// TestHTTPFrontOriginPolicy: the HTTP front applies the origin policy of the
// WebTransport server (spec §9): a loopback page is allowed only when the
// front is reached on a loopback address; other Origins need the allow-list;
// no Origin is a non-browser client.
func TestHTTPFrontOriginPolicy(t *testing.T) {
	on := func(ip string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP(ip), Port: 8080}))
	}
	for _, c := range []struct {
		listener, origin string
		allow            []string
		want             bool
	}{
		{"127.0.0.1", "", nil, true},
		{"127.0.0.1", "http://127.0.0.1:5173", nil, true},
		{"127.0.0.1", "http://localhost:3000", nil, true},
		{"::1", "http://[::1]:3000", nil, true},
		{"127.0.0.1", "https://evil.example", nil, false},
		{"192.0.2.7", "http://127.0.0.1:5173", nil, false},
		{"192.0.2.7", "http://127.0.0.1:5173", []string{"http://127.0.0.1:5173"}, true},
		{"192.0.2.7", "https://app.example", []string{"*"}, true},
		{"192.0.2.7", "", nil, true},
	} {
		h := NewHTTPFront(HTTPConfig{AllowedOrigins: c.allow})
		r := on(c.listener)
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if got := h.originAllowed(r); got != c.want {
			t.Errorf("listener %s, Origin %q, allow %v: allowed=%v, want %v", c.listener, c.origin, c.allow, got, c.want)
		}
	}
}
