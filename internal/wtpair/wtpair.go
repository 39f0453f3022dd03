// Package wtpair gives tests the two ends of one real webtransport-go
// session over QUIC on 127.0.0.1, for the tests of package wtconn and the
// contract test that holds package wtconn/memwt to webtransport-go's
// behaviour.
package wtpair

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// Loopback returns the client and server ends of one webtransport-go
// session on 127.0.0.1; the test's cleanup closes both and their sockets.
func Loopback(t testing.TB) (client, server *webtransport.Session) {
	t.Helper()
	cert, err := certs.GenerateDev(certs.DevOptions{})
	if err != nil {
		t.Fatal(err)
	}
	qconf := &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true}
	h3 := &http3.Server{TLSConfig: http3.ConfigureTLSConfig(certs.ServerTLSConfig(cert)), QUICConfig: qconf}
	webtransport.ConfigureHTTP3Server(h3)
	ws := &webtransport.Server{H3: h3, CheckOrigin: func(*http.Request) bool { return true }}
	sessions := make(chan *webtransport.Session, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/wt", func(w http.ResponseWriter, r *http.Request) {
		if s, err := ws.Upgrade(w, r); err == nil {
			sessions <- s
		}
	})
	h3.Handler = mux
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ws.Serve(pc) //nolint:errcheck // ends with Close
	t.Cleanup(func() { ws.Close(); pc.Close() })

	tlsConf, err := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{cert.Hash()}})
	if err != nil {
		t.Fatal(err)
	}
	tr := &webtransport.Transport{TLSClientConfig: tlsConf, QUICConfig: qconf}
	t.Cleanup(func() { tr.Close() })
	// A hang guard: a dial on loopback takes milliseconds.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, cs, err := tr.Dial(ctx, "https://"+pc.LocalAddr().String()+"/wt", nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ss := <-sessions:
		return cs, ss
	case <-ctx.Done():
		t.Fatal("no session on the server side")
	}
	return nil, nil
}
