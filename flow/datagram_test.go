package flow_test

import (
	"net"
	"net/http"

	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/wire"
)

// guideInitialize is the initialize of a client that follows only the guide
// and the published schema: its transport object has no datagrams field.
const guideInitialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"guide-only","version":"0"},"transport":{"type":"mcp-flow","version":"0.1","encodings":["json"]}}}`

// TestDatagramDuringInitialize: datagrams that arrive while initialize is
// being answered are read by one goroutine while the handshake publishes its
// results on another (spec §4, §6). Under -race this reported a data race on
// the handshake's fields; the session must also come out READY.
func TestDatagramDuringInitialize(t *testing.T) {
	srv := startServer(t, nil)
	for range 3 {
		p, _, err := dialRaw(t, srv, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.write(frame(guideInitialize))
		d := wire.DatagramHeader{Channel: wire.ChannelProgress, RequestID: 7}.Append(nil)
		d = append(d, `{"progressToken":7,"progress":1}`...)
		// Several, so that some land while initialize is being handled.
		for range 20 {
			if err := p.sess.SendDatagram(d); err != nil {
				t.Fatal(err)
			}
		}
		// Before READY a datagram is answered -32004 with id null (at most
		// once a second); the initialize result must come all the same.
		b := p.readSkipping(jsonrpc.CodeDatagramsNotSupported)
		var r struct{ Result *flow.InitializeResult }
		if err := json.Unmarshal(b, &r); err != nil || r.Result == nil || !r.Result.Transport.DatagramsSupported {
			t.Fatalf("initialize answered %s (%v)", b, err)
		}
		p.write(frame(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		p.write(frame(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if got := string(p.readSkipping(jsonrpc.CodeDatagramsNotSupported)); got != `{"jsonrpc":"2.0","id":1,"result":{}}` {
			t.Fatalf("ping after initialize: %s", got)
		}
		p.sess.CloseWithError(0, "")
		<-p.sess.Context().Done()
	}
}

// readSkipping reads the next frame that is not an error with id null and
// the given code.
func (p *rawPeer) readSkipping(code jsonrpc.Code) []byte {
	p.t.Helper()
	for {
		b := p.read()
		var r struct {
			ID    json.RawMessage
			Error *jsonrpc.Error
		}
		if json.Unmarshal(b, &r) == nil && r.Error != nil && string(r.ID) == "null" && r.Error.Code == code {
			continue
		}
		return b
	}
}

// initRawWith dials a raw peer and initializes it with the given initialize
// message (JSON encoding).
func initRawWith(t *testing.T, srv *flow.Server, initialize string) *rawPeer {
	t.Helper()
	p, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.write(frame(initialize))
	var r struct{ Result *flow.InitializeResult }
	if b := p.read(); json.Unmarshal(b, &r) != nil || r.Result == nil {
		t.Fatalf("initialize answered %s", b)
	}
	p.write(frame(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	return p
}

// TestGuideClientGetsProgressDatagrams: a client that follows only the guide
// (no datagrams field) gets progress as datagrams when the server announces
// datagramsSupported: true (spec §6): channel 1, flags 0, the request's id,
// the params of notifications/progress as payload.
func TestGuideClientGetsProgressDatagrams(t *testing.T) {
	got := make(chan struct{})
	srv := customServer(t, flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		// Datagrams may be lost: send a newer update until one arrives.
		for i := 1; ; i++ {
			if err := req.Progress(float64(i), 0, ""); err != nil {
				return nil, err
			}
			select {
			case <-got:
				return map[string]int{"updates": i}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-tick.C:
			}
		}
	}), nil)
	p := initRawWith(t, srv, guideInitialize)
	p.write(frame(`{"jsonrpc":"2.0","id":5,"method":"work","params":{"_meta":{"progressToken":"tok"}}}`))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := p.sess.ReceiveDatagram(ctx)
	if err != nil {
		t.Fatalf("no progress datagram: %v", err)
	}
	close(got)
	h, payload, err := wire.ParseDatagram(b)
	if err != nil {
		t.Fatal(err)
	}
	var pr flow.Progress
	if h.Channel != wire.ChannelProgress || h.RequestID != 5 || json.Unmarshal(payload, &pr) != nil || string(pr.ProgressToken) != `"tok"` || pr.Progress < 1 {
		t.Fatalf("datagram %+v %s", h, payload)
	}
	// The newest value comes on the control stream just before the result,
	// since its datagram may be lost (spec §6.2).
	var last flow.Progress
	for {
		var m struct {
			ID     json.RawMessage
			Method string
			Params json.RawMessage
			Result *struct{ Updates int }
		}
		b := p.read()
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Method == protocol.MethodProgress {
			if err := json.Unmarshal(m.Params, &last); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if string(m.ID) != "5" || m.Result == nil {
			t.Fatalf("want the result of 5, got %s", b)
		}
		if last.Progress != float64(m.Result.Updates) || string(last.ProgressToken) != `"tok"` {
			t.Fatalf("the newest progress before the result was %+v, want %d", last, m.Result.Updates)
		}
		break
	}
}

// burstServer answers "burst" with n progress updates sent as fast as the
// handler can, then the result; server receives the server session.
func burstServer(t *testing.T, n int, lim flow.Limits, server chan<- *flow.Session) *flow.Server {
	return customServer(t, flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		for i := 1; i <= n; i++ {
			if err := req.Progress(float64(i), float64(n), ""); err != nil {
				return nil, err
			}
		}
		server <- req.Session
		return map[string]int{"updates": n}, nil
	}), func(c *flow.ServerConfig) { c.Limits = lim })
}

// callBurst calls "burst" and checks what the client saw: progress in
// increasing order, ending with the final value, all before the result.
func callBurst(t *testing.T, s *flow.Session, n int) []float64 {
	t.Helper()
	var mu sync.Mutex
	var got []float64
	backwards := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := s.Call(ctx, "burst", nil, flow.WithProgress(func(p flow.Progress) {
		mu.Lock()
		if len(got) > 0 && p.Progress <= got[len(got)-1] {
			backwards++
		}
		got = append(got, p.Progress)
		mu.Unlock()
	})); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if backwards > 0 {
		t.Errorf("progress went backwards %d times: %v", backwards, got)
	}
	if len(got) == 0 || got[len(got)-1] != float64(n) {
		t.Fatalf("before the result the client saw %d updates, the last %v; want the last to be %d", len(got), got[max(0, len(got)-5):], n)
	}
	return slices.Clone(got)
}

// TestProgressBurst: of a burst of 2,000 updates the client sees the final
// value before the result, and never a value going backwards (spec §6.2),
// both with the default rate limit and paced only by the connection. The
// counters add up: every update was superseded, sent as a datagram or sent
// on the control stream.
func TestProgressBurst(t *testing.T) {
	const n = 2000
	for _, tc := range []struct {
		name string
		rate int
	}{{"default rate", 0}, {"no rate cap", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			servers := make(chan *flow.Session, 1)
			srv := burstServer(t, n, flow.Limits{MaxProgressRate: tc.rate}, servers)
			s := dial(t, srv, nil)
			if !s.DatagramsEnabled() {
				t.Fatal("datagrams not negotiated")
			}
			got := callBurst(t, s, n)
			server := <-servers
			ss, cs := server.Stats(), s.Stats()
			// One datagram may still be leaving: it is counted once sent.
			if ss.ProgressUpdates != n || ss.ProgressSuperseded+ss.ProgressDatagramsSent+ss.ProgressOnControl < n-1 {
				t.Errorf("server counters do not add up to %d updates: %+v", n, ss)
			}
			if ss.ProgressOnControl == 0 {
				t.Errorf("the newest value did not go on the control stream before the result: %+v", ss)
			}
			if cs.ProgressDelivered != uint64(len(got)) {
				t.Errorf("client delivered %d, the callback saw %d", cs.ProgressDelivered, len(got))
			}
			// The sender ends with its session.
			s.Close()
			select {
			case <-flow.ProgressSenderEnded(server):
			case <-time.After(10 * time.Second):
				t.Error("the server's progress sender outlived its session")
			}
			t.Logf("%d updates: server superseded %d, sent %d as datagrams, %d on the control stream; client received %d datagrams, delivered %d, dropped %d stale",
				n, ss.ProgressSuperseded, ss.ProgressDatagramsSent, ss.ProgressOnControl, cs.ProgressDatagramsReceived, cs.ProgressDelivered, cs.ProgressStale)
		})
	}
}

// TestMaxProgressRate: the progress sender sends no more datagrams than
// Limits.MaxProgressRate allows (spec §8); what comes faster is superseded,
// and the final value still arrives before the result.
func TestMaxProgressRate(t *testing.T) {
	const n, rate = 2000, 20
	server := make(chan *flow.Session, 1)
	srv := burstServer(t, n, flow.Limits{MaxProgressRate: rate}, server)
	s := dial(t, srv, nil)
	start := time.Now()
	callBurst(t, s, n)
	elapsed := time.Since(start)
	ss := (<-server).Stats()
	// The first datagram leaves at once, each next one a 1/rate later.
	if limit := 1 + uint64(elapsed.Seconds()*rate); ss.ProgressDatagramsSent > limit {
		t.Fatalf("%d progress datagrams in %v, over %d/s (at most %d): %+v", ss.ProgressDatagramsSent, elapsed, rate, limit, ss)
	}
	if ss.ProgressSuperseded == 0 {
		t.Fatalf("no update superseded: %+v", ss)
	}
}

// TestProgressNeverBackwards: a progress datagram whose value is not above
// the last one delivered for the call (a datagram overtaken on the way, or a
// duplicate of the value sent on the control stream) is dropped by the
// client (spec §6.2).
func TestProgressNeverBackwards(t *testing.T) {
	seen5, seen7 := make(chan struct{}), make(chan struct{})
	srv := customServer(t, flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		id, _ := req.ID.Uint32()
		token := json.RawMessage(req.ID.Raw())
		if err := req.Session.Notify(protocol.MethodProgress, flow.Progress{ProgressToken: token, Progress: 5}); err != nil {
			return nil, err
		}
		select {
		case <-seen5:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			// An old value, then a newer one, until the newer one arrives.
			for _, v := range []float64{3, 5, 7} {
				if err := req.Session.SendDatagram(wire.ChannelProgress, id, flow.Progress{ProgressToken: token, Progress: v}); err != nil {
					return nil, err
				}
			}
			select {
			case <-seen7:
				return map[string]any{}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-tick.C:
			}
		}
	}), nil)
	s := dial(t, srv, nil)
	var mu sync.Mutex
	var got []float64
	var once5, once7 sync.Once
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Call(ctx, "x", nil, flow.WithProgress(func(p flow.Progress) {
		mu.Lock()
		got = append(got, p.Progress)
		mu.Unlock()
		switch p.Progress {
		case 5:
			once5.Do(func() { close(seen5) })
		case 7:
			once7.Do(func() { close(seen7) })
		}
	})); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []float64{5, 7}) {
		t.Fatalf("progress delivered: %v, want [5 7]", got)
	}
}

// TestDatagramDuringInitializeClientSide: a server that sends datagrams
// before its initialize result; the client reads them on one goroutine while
// its handshake publishes the result on another (spec §4, §6). Under -race
// this reported a data race; the session must also come out READY, with
// datagrams.
func TestDatagramDuringInitializeClientSide(t *testing.T) {
	h3 := &http3.Server{TLSConfig: http3.ConfigureTLSConfig(certs.ServerTLSConfig(flowtest.Cert)), QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true}}
	webtransport.ConfigureHTTP3Server(h3)
	ws := &webtransport.Server{H3: h3}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		s, err := ws.Upgrade(w, r)
		if err != nil {
			return
		}
		st, err := s.AcceptStream(r.Context())
		if err != nil {
			return
		}
		fr := wire.NewFrameReader(st, 1<<20)
		for {
			b, err := fr.ReadFrame()
			if err != nil {
				return
			}
			var req struct {
				ID     json.RawMessage
				Method string
			}
			if json.Unmarshal(b, &req) != nil || req.ID == nil {
				continue
			}
			result := `{}`
			if req.Method == "initialize" {
				d := wire.DatagramHeader{Channel: wire.ChannelLog, RequestID: 0}.Append(nil)
				d = append(d, `{"level":"info","data":"early"}`...)
				for range 20 {
					if s.SendDatagram(d) != nil {
						return
					}
				}
				result = `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"early-datagrams","version":"0"},"transport":{"type":"mcp-flow","version":"0.1","encoding":"json","maxConcurrentStreams":1,"datagramsSupported":true,"maxFrameSize":65536}}`
			}
			st.Write(frame(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`))
		}
	})
	h3.Handler = mux
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); ws.Serve(pc) }()
	t.Cleanup(func() { ws.Close(); pc.Close(); <-served })
	url := "https://" + pc.LocalAddr().String() + "/mcp"
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := flow.Dial(ctx, url, flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t), Encodings: []codec.Name{codec.JSON}})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		err = s.Ping(ctx)
		cancel()
		if !s.DatagramsEnabled() || s.InitializeResult().ServerInfo.Name != "early-datagrams" || err != nil {
			t.Fatalf("after initialize: datagrams %v, result %+v, ping %v", s.DatagramsEnabled(), s.InitializeResult(), err)
		}
		s.Close()
	}
}

// TestProgressLossyPath: through a path that loses a fifth of the packets
// each way and reorders them (internal/lossrelay), the client still sees its
// newest progress value before the result, and never a value going
// backwards (spec §6.2).
func TestProgressLossyPath(t *testing.T) {
	const n = 300
	servers := make(chan *flow.Session, 1)
	srv := customServer(t, flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		// Work that reports as it goes: an update every millisecond.
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 1; i <= n; i++ {
			if err := req.Progress(float64(i), n, ""); err != nil {
				return nil, err
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		servers <- req.Session
		return map[string]int{"updates": n}, nil
	}), nil)
	path := lossrelay.Path{Loss: 0.2, Delay: 2 * time.Millisecond, Jitter: 4 * time.Millisecond}
	relay, err := lossrelay.New(lossrelay.Config{Target: srv.Addr().(*net.UDPAddr), Up: path, Down: path, Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, "https://"+relay.Addr().String()+flow.DefaultPath, flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.DatagramsEnabled() {
		t.Fatal("datagrams not negotiated")
	}
	got := callBurst(t, s, n)
	ss, cs := (<-servers).Stats(), s.Stats()
	up, down := relay.Stats()
	t.Logf("%d updates through a lossy path: server superseded %d, sent %d as datagrams, %d on the control stream; client received %d datagrams (%d lost or late), delivered %d, dropped %d stale; relay dropped %d up, %d down, reordered %d down",
		n, ss.ProgressSuperseded, ss.ProgressDatagramsSent, ss.ProgressOnControl, cs.ProgressDatagramsReceived,
		ss.ProgressDatagramsSent-min(ss.ProgressDatagramsSent, cs.ProgressDatagramsReceived), cs.ProgressDelivered, cs.ProgressStale, up.Dropped, down.Dropped, down.Reordered)
	if down.Dropped == 0 {
		t.Errorf("the relay dropped nothing towards the client: the path was not lossy")
	}
	if uint64(len(got)) != cs.ProgressDelivered {
		t.Errorf("client delivered %d, the callback saw %d", cs.ProgressDelivered, len(got))
	}
}
