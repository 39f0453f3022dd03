package lossrelay

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// TestBottleneckDropTail: a burst of 100 datagrams of 1,000 bytes into a
// 1 MB/s bottleneck with a 20 KB queue: about 20 pass, the rest are dropped
// by the full queue, and those that pass leave a millisecond apart (1,000
// bytes at 1 MB/s), so the last arrives at least 1 ms per datagram after
// the burst was sent (an arrival is seen late, never early).
func TestBottleneckDropTail(t *testing.T) {
	const n, size, rate, queue = 100, 1000, 1e6, 20000
	tc, got := target(t, false)
	r := start(t, Config{Target: tc.LocalAddr().(*net.UDPAddr), Up: Path{Rate: rate, Queue: queue}, Record: true})
	c := client(t, r)
	msg := make([]byte, size)
	t0 := time.Now()
	for i := range n {
		binary.BigEndian.PutUint32(msg, uint32(i))
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(20 * time.Second)
	var last time.Time
	var arrived int
	for {
		up, _ := r.Stats()
		if up.Forwarded+up.QueueDropped == n && arrived == int(up.Forwarded) {
			break
		}
		select {
		case <-got:
			last = time.Now()
			arrived++
		case <-deadline:
			t.Fatalf("after 20 s: %d arrived, counters %+v", arrived, up)
		}
	}
	up, _ := r.Stats()
	// At least a queue's worth passes; a few more if the relay read the
	// burst slowly (the queue drains 1,000 bytes a millisecond meanwhile),
	// never most of it.
	if up.QueueDropped == 0 || arrived < queue/size || arrived > n/2 {
		t.Fatalf("%d arrived, %d dropped by the queue: want about %d to pass a %d-byte queue", arrived, up.QueueDropped, queue/size, queue)
	}
	if span, want := last.Sub(t0), time.Duration(arrived)*time.Millisecond; span < want {
		t.Errorf("%d datagrams arrived within %v of the burst: a %g B/s bottleneck needs %v", arrived, span, float64(rate), want)
	}
	if drops, _ := r.QueueDrops(); len(drops) != int(up.QueueDropped) {
		t.Errorf("%d queue drops recorded, %d counted", len(drops), up.QueueDropped)
	}
	if lim := time.Duration(float64(queue-size) / rate * float64(time.Second)); up.QueueDelayMax > lim {
		t.Errorf("a datagram waited %v in the queue, more than its %d bytes allow (%v)", up.QueueDelayMax, queue, lim)
	}
}

// TestTCPRelayShaped: 200 KB each way through a TCP relay with a 1 MB/s
// bottleneck and 10 ms of delay arrive whole and in order, and no sooner
// than the rate allows (0.2 s + 10 ms); the queue never holds more than
// its bound.
func TestTCPRelayShaped(t *testing.T) {
	const size, rate, queue = 200_000, 1e6, 20000
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(c, c) // echo until the client half-closes
		c.(*net.TCPConn).CloseWrite()
		served <- err
	}()
	p := Path{Rate: rate, Queue: queue, Delay: 10 * time.Millisecond}
	r, err := NewTCP(ln.Addr().String(), p, p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := net.Dial("tcp", r.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i * 7)
	}
	t0 := time.Now()
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write(want)
		c.(*net.TCPConn).CloseWrite()
		wrote <- err
	}()
	got, err := io.ReadAll(c)
	el := time.Since(t0)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("echoed %d of %d bytes (equal: %v): %v", len(got), size, bytes.Equal(got, want), err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if min := time.Duration(size/rate*float64(time.Second)) + 10*time.Millisecond; el < min {
		t.Errorf("200 KB came back in %v: the bottleneck allows %v at best", el, min)
	}
	up, down := r.Stats()
	if up.Bytes != size || down.Bytes != size {
		t.Errorf("relayed %d up and %d down, want %d each", up.Bytes, down.Bytes, size)
	}
	lim := time.Duration(float64(queue) / rate * float64(time.Second))
	if up.QueueDelayMax > lim || down.QueueDelayMax > lim {
		t.Errorf("queue delays up %v down %v exceed the %d-byte queue (%v)", up.QueueDelayMax, down.QueueDelayMax, queue, lim)
	}
}
