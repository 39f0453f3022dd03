package main

import (
	"bytes"
	"context"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/quiclb"
)

// TestServerIDFlag (issue 40): with -server-id 0a0b -server-id-rotation 3
// every short-header packet the client sends carries a Destination
// Connection ID of the server's making that names it, in QUIC-LB's
// plaintext form (11 octets: 0x6a = rotation 3 << 5 | 10, then 0a0b, then
// 8 octets of nonce), as a balancer reading it sees (package quiclb).
// Flags outside the draft's limits are usage errors.
func TestServerIDFlag(t *testing.T) {
	t.Parallel()
	url, hash, _, _ := runServer(t, buildServer(t), "-server-id", "0a0b", "-server-id-rotation", "3")
	w := watchUDP(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, w.url, flow.ClientConfig{TLSConfig: flowtest.PinnedTLS(t, hash)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 3 {
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	const cidLen = 1 + 2 + quiclb.DefaultNonceLen
	dcids := w.shortHeaderDCIDs(cidLen)
	if len(dcids) == 0 {
		t.Fatal("the client sent no short-header packet")
	}
	for _, d := range dcids {
		sid, rot, ok := quiclb.ServerID(d, 2)
		if d[0] != 0x6a || !ok || rot != 3 || !bytes.Equal(sid, []byte{0x0a, 0x0b}) {
			t.Fatalf("a short-header packet to the server has DCID %x; want 6a0a0b and an 8-octet nonce", d)
		}
	}
	t.Logf("%d short-header packets, each to a connection ID naming server 0a0b (e.g. %x)", len(dcids), dcids[0])

	for _, bad := range [][]string{{"-server-id", "zz"}, {"-server-id", "000102030405060708090a0b"}, {"-server-id", "01", "-server-id-rotation", "7"}} {
		if code := run(append([]string{"-addr", "127.0.0.1:0", "-cert-dir", t.TempDir()}, bad...)); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}

// udpWatch relays one client's datagrams to a server and keeps a copy of
// each (a capture, not a balancer).
type udpWatch struct {
	url  string
	mu   sync.Mutex
	seen [][]byte
}

// watchUDP starts a udpWatch in front of the server at serverURL, ended
// with the test.
func watchUDP(t *testing.T, serverURL string) *udpWatch {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	target, err := net.ResolveUDPAddr("udp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.DialUDP("udp", nil, target)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { front.Close(); back.Close(); wg.Wait() })
	w := &udpWatch{}
	u.Host = front.LocalAddr().String()
	w.url = u.String()
	var client sync.Mutex
	var from *net.UDPAddr
	wg.Go(func() {
		buf := make([]byte, 65536)
		for {
			n, a, err := front.ReadFromUDP(buf)
			if err != nil {
				return
			}
			client.Lock()
			from = a
			client.Unlock()
			w.mu.Lock()
			w.seen = append(w.seen, bytes.Clone(buf[:n]))
			w.mu.Unlock()
			back.Write(buf[:n])
		}
	})
	wg.Go(func() {
		buf := make([]byte, 65536)
		for {
			n, err := back.Read(buf)
			if err != nil {
				return
			}
			client.Lock()
			a := from
			client.Unlock()
			front.WriteToUDP(buf[:n], a)
		}
	})
	return w
}

// shortHeaderDCIDs are the Destination Connection IDs of the short-header
// packets seen (RFC 9000 §17.3: the first bit 0, then the ID, whose
// length the receiver knows: cidLen).
func (w *udpWatch) shortHeaderDCIDs(cidLen int) [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids [][]byte
	for _, d := range w.seen {
		if len(d) > cidLen && d[0]&0x80 == 0 {
			ids = append(ids, d[1:1+cidLen])
		}
	}
	return ids
}
