package lossrelay

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestOriginBlocksUDPKeepsTCP: through an Origin with Blocked, no datagram
// reaches the UDP target while a TCP connection to the same port reaches the
// TCP target.
func TestOriginBlocksUDPKeepsTCP(t *testing.T) {
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	o, err := NewOrigin("127.0.0.2:0", udp.LocalAddr().(*net.UDPAddr), tcp.Addr().String(), Blocked, Blocked)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.UDP.Addr().Port != o.TCP.Addr().(*net.TCPAddr).Port {
		t.Fatalf("UDP at %v, TCP at %v: not one port", o.UDP.Addr(), o.TCP.Addr())
	}
	go func() {
		c, err := tcp.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", o.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 2)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "hi" {
		t.Fatalf("TCP echo through the origin: %q, %v", got, err)
	}
	u, err := net.Dial("udp", o.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	for range 20 {
		u.Write([]byte("x"))
	}
	udp.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, _, err := udp.ReadFrom(make([]byte, 10)); err == nil {
		t.Fatalf("a datagram of %d bytes crossed a blocked origin", n)
	}
	if up, _ := o.UDP.Stats(); up.Dropped == 0 {
		t.Fatalf("the relay saw no datagram to drop: %+v", up)
	}
}
