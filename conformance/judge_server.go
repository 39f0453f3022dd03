package conformance

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/wtconn"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// judgeServer serves one scenario on a port of its own.
type judgeServer struct {
	h3  *http3.Server
	wt  *webtransport.Server
	pc  net.PacketConn
	url string

	sc      scenario
	ev      *evidence
	finWait time.Duration  // Options.FINWait
	wg      sync.WaitGroup // sessions being judged
	one     sync.Once      // the first session is judged; later ones are refused
	done    chan struct{}  // closed when the judged session's control loop ended

	mu   sync.Mutex
	sess wtconn.Session // the judged session

	// closing is set once the judge itself begins to end the judged
	// session (the drain's FIN, or close); what ends it before that was the
	// client's doing.
	closing atomic.Bool
}

// newJudge binds 127.0.0.1:0 and serves sc until close.
func newJudge(tlsConf *tls.Config, sc scenario, ev *evidence, finWait time.Duration) (*judgeServer, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	j := &judgeServer{pc: pc, sc: sc, ev: ev, finWait: finWait, done: make(chan struct{})}
	tc := tlsConf.Clone()
	tc.MinVersion = tls.VersionTLS13 // guide §9
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp-flow", j.serveHTTP)
	j.h3 = &http3.Server{
		TLSConfig: http3.ConfigureTLSConfig(tc),
		QUICConfig: &quic.Config{
			EnableDatagrams:                  true,
			EnableStreamResetPartialDelivery: true,
			MaxIdleTimeout:                   30 * time.Second,
			Tracer:                           qlogdir.Tracer(),
		},
		Handler: mux,
	}
	webtransport.ConfigureHTTP3Server(j.h3)
	j.wt = &webtransport.Server{H3: j.h3, CheckOrigin: func(*http.Request) bool { return true }}
	j.url = "https://" + pc.LocalAddr().String() + "/mcp-flow"
	go j.wt.Serve(pc) //nolint:errcheck // ends with close
	return j, nil
}

// awaitEnd waits up to d for the judged session to end by itself.
func (j *judgeServer) awaitEnd(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-j.done:
		j.ev.mu.Lock()
		j.ev.ended = true
		j.ev.mu.Unlock()
	case <-t.C:
	}
}

// close ends the judged session, stops the server and waits for both.
func (j *judgeServer) close() {
	j.closing.Store(true)
	j.mu.Lock()
	if j.sess != nil {
		_ = j.sess.CloseWithError(0, "conformance: scenario over")
	}
	j.mu.Unlock()
	_ = j.wt.Close()
	_ = j.pc.Close()
	j.wg.Wait()
}

func (j *judgeServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	first := false
	j.one.Do(func() { first = true })
	if !first {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	j.wg.Add(1)
	defer j.wg.Done()
	s, err := j.wt.Upgrade(w, r)
	if err != nil {
		j.ev.note("WebTransport upgrade failed: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	j.ev.setConnected()
	js := &judgeSession{s: wtconn.Wrap(s), sc: j.sc, ev: j.ev, closing: &j.closing, finWait: j.finWait, pending: map[string]chan *jsonrpc.Response{}}
	j.mu.Lock()
	j.sess = js.s
	j.mu.Unlock()
	defer close(j.done)
	js.run()
}
