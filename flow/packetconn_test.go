package flow_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
)

// TestServerOnPacketConn: a server given ServerConfig.PacketConn (a socket
// its supervisor holds across restarts: mcp-flow-server -udp-fd) serves on
// it, at its address, and its Close closes it.
func TestServerOnPacketConn(t *testing.T) {
	t.Parallel()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	srv := startServer(t, func(c *flow.ServerConfig) { c.PacketConn = pc; c.Addr = "127.0.0.1:1" })
	if got := srv.Addr().String(); got != pc.LocalAddr().String() {
		t.Fatalf("the server is at %s, not at its PacketConn's %s", got, pc.LocalAddr())
	}
	s := dial(t, srv, nil)
	// Hang guard: a ping takes about a millisecond here.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("ping on the PacketConn's server: %v", err)
	}
	s.Close()
	srv.Close()
	if _, _, err := pc.ReadFrom(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("after the server's Close, reading its PacketConn: %v, want net.ErrClosed", err)
	}
}
