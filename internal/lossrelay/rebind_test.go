package lossrelay

import (
	"net"
	"testing"
	"time"
)

// TestRebind: after Rebind the target sees the client's datagrams from a
// new address (the one Rebind and Outward name), answers to it reach the
// client, and what the target still sends to the old address is lost;
// Mappings counts what the target sent to each client's current address.
func TestRebind(t *testing.T) {
	tc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	r := start(t, Config{Target: tc.LocalAddr().(*net.UDPAddr)})
	c := client(t, r)
	// at reads one datagram at the target and returns where it came from.
	at := func(want string) *net.UDPAddr {
		t.Helper()
		tc.SetReadDeadline(time.Now().Add(10 * time.Second)) // a hang guard: loopback takes microseconds
		buf := make([]byte, 100)
		n, from, err := tc.ReadFromUDP(buf)
		if err != nil || string(buf[:n]) != want {
			t.Fatalf("target read %q, %v; want %q", buf[:n], err, want)
		}
		return from
	}
	c.Write([]byte("before"))
	first := at("before")
	if ms := r.Mappings(); len(ms) != 1 || ms[0].Outward.Port != first.Port || ms[0].Client.String() != c.LocalAddr().String() {
		t.Errorf("Mappings says %+v; the target saw %v from %v", ms, first, c.LocalAddr())
	}
	moved, err := r.Rebind()
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("after"))
	second := at("after")
	if second.Port == first.Port {
		t.Fatalf("the target saw the client from %v before and after Rebind", first)
	}
	if m := moved[c.LocalAddr().String()]; m == nil || m.Port != second.Port {
		t.Errorf("Rebind said %v, the target saw %v", m, second)
	}
	// The old mapping is gone: a datagram sent to it first is lost, and the
	// one sent to the new mapping next is the first the client reads.
	tc.WriteToUDP([]byte("stale"), first)
	tc.WriteToUDP([]byte("fresh"), second)
	if got := recv(t, c); string(got) != "fresh" {
		t.Errorf("client read %q first, want fresh", got)
	}
	if ms := r.Mappings(); len(ms) != 1 || ms[0].Outward.Port != second.Port || ms[0].Received != uint64(len("fresh")) {
		t.Errorf("Mappings says %+v after the rebinding, want %v with 5 bytes received", ms, second)
	}
}
