package js

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// connectSeen is what a CONNECT carried that a token could be in: its
// Authorization header and its access_token query parameter (RFC 6750 §2.1,
// §2.3), with the probe parameter the page names each attempt by.
type connectSeen struct {
	Probe         string
	Authorization string
	Query         string
}

// connectRecorder is a bare WebTransport server on 127.0.0.1 that records
// each CONNECT (connectSeen) and accepts it: the control stream the
// transport opens gets our FIN at once, and the session ends when the page
// closes it. It speaks no MCP-Flow: it is what a server sees of a browser's
// CONNECT, nothing more (docs/spec.md §9.1, "Browsers").
type connectRecorder struct {
	URL  string
	mu   sync.Mutex
	seen []connectSeen
}

// startRecorder starts a connectRecorder on the development certificate of
// flowtest (so a page pins it by its hash); it stops with the test.
func startRecorder(t *testing.T) *connectRecorder {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &connectRecorder{URL: "https://" + pc.LocalAddr().String() + "/mcp-flow"}
	mux := http.NewServeMux()
	h3 := &http3.Server{TLSConfig: http3.ConfigureTLSConfig(certs.ServerTLSConfig(flowtest.Cert)), Handler: mux}
	webtransport.ConfigureHTTP3Server(h3)
	wt := &webtransport.Server{H3: h3, CheckOrigin: func(*http.Request) bool { return true }}
	var sessions sync.WaitGroup
	mux.HandleFunc("/mcp-flow", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		rec.mu.Lock()
		rec.seen = append(rec.seen, connectSeen{Probe: q.Get("probe"), Authorization: r.Header.Get("Authorization"), Query: q.Get(bearer.QueryParam)})
		rec.mu.Unlock()
		s, err := wt.Upgrade(w, r)
		if err != nil {
			return
		}
		sessions.Go(func() {
			ctx, cancel := context.WithTimeout(s.Context(), 30*time.Second)
			defer cancel()
			defer s.CloseWithError(0, "")
			str, err := s.AcceptStream(ctx)
			if err != nil {
				return
			}
			str.Close()
			io.Copy(io.Discard, str)
		})
	})
	served := make(chan error, 1)
	go func() { served <- wt.Serve(pc) }()
	t.Cleanup(func() {
		wt.Close()
		pc.Close()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, context.Canceled) {
			t.Logf("recorder: %v", err)
		}
		sessions.Wait()
	})
	return rec
}

// Seen returns the CONNECTs recorded so far, by probe name (the last of each).
func (r *connectRecorder) Seen() map[string]connectSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]connectSeen{}
	for _, s := range r.seen {
		m[s.Probe] = s
	}
	return m
}
