package lossrelay

import (
	"encoding/binary"
	"math"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"
)

// target is a UDP socket on loopback that the relay forwards to; its
// datagrams arrive on the returned channel.
func target(t *testing.T, echo bool) (*net.UDPConn, <-chan []byte) {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(bufferSize)
	got := make(chan []byte, 100000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			got <- append([]byte(nil), buf[:n]...)
			if echo {
				c.WriteToUDP(buf[:n], from)
			}
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return c, got
}

func start(t *testing.T, cfg Config) *Relay {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func client(t *testing.T, r *Relay) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(bufferSize)
	t.Cleanup(func() { c.Close() })
	return c
}

func numbered(i int) []byte { return binary.BigEndian.AppendUint32(make([]byte, 0, 100), uint32(i)) }

// recv reads one datagram with a deadline.
func recv(t *testing.T, c *net.UDPConn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no datagram back: %v", err)
	}
	return buf[:n]
}

// TestForwardsBothWays: without loss every datagram reaches the target and
// every answer comes back, to the right client of two.
func TestForwardsBothWays(t *testing.T) {
	tc, _ := target(t, true)
	r := start(t, Config{Target: tc.LocalAddr().(*net.UDPAddr)})
	a, b := client(t, r), client(t, r)
	for i := range 100 {
		for j, c := range []*net.UDPConn{a, b} {
			msg := numbered(2*i + j)
			c.Write(msg)
			if got := recv(t, c); !slices.Equal(got, msg) {
				t.Fatalf("client %d got %x back, want %x", j, got, msg)
			}
		}
	}
	up, down := r.Stats()
	up.ReadLateMax, up.ReadLateSum, down.ReadLateMax, down.ReadLateSum = 0, 0, 0, 0 // the relay's scheduling
	want := Counters{Forwarded: 200, Bytes: 800}
	if up != want || down != want {
		t.Errorf("counters up %+v down %+v, want %+v each", up, down, want)
	}
}

// send sends n numbered datagrams through a relay with cfg, one at a time,
// and returns the numbers that reached the target, in the order they did.
func send(t *testing.T, cfg Config, n int) (arrived []int, r *Relay) {
	t.Helper()
	tc, got := target(t, false)
	cfg.Target = tc.LocalAddr().(*net.UDPAddr)
	r = start(t, cfg)
	c := client(t, r)
	deadline := time.Now().Add(20 * time.Second)
	carried := func() uint64 { up, _ := r.Stats(); return up.Forwarded + up.Dropped }
	for i := range n {
		if _, err := c.Write(numbered(i)); err != nil {
			t.Fatal(err)
		}
		// In batches, so that no socket buffer overflows (a loss the relay
		// was not asked for): the relay has read the last batch.
		for i%100 == 99 && carried() < uint64(i+1) && time.Now().Before(deadline) {
			runtime.Gosched()
		}
	}
	for {
		up, _ := r.Stats()
		if up.Forwarded+up.Dropped == uint64(n) && len(arrived) == int(up.Forwarded) {
			break
		}
		select {
		case b := <-got:
			arrived = append(arrived, int(binary.BigEndian.Uint32(b)))
		case <-time.After(time.Until(deadline)):
			t.Fatalf("after 20 s: %d arrived, counters %+v", len(arrived), up)
		}
	}
	return arrived, r
}

// TestLossSeeded: a loss rate of 25 % drops about a quarter, the counters
// match what arrived, and the same seed drops the same datagrams.
func TestLossSeeded(t *testing.T) {
	const n, p = 4000, 0.25
	a, r := send(t, Config{Up: Path{Loss: p}, Seed: 7}, n)
	up, down := r.Stats()
	if up.Forwarded != uint64(len(a)) || up.Forwarded+up.Dropped != n || down != (Counters{}) {
		t.Fatalf("counters up %+v down %+v; %d arrived of %d", up, down, len(a), n)
	}
	if sd := math.Sqrt(n * p * (1 - p)); math.Abs(float64(up.Dropped)-n*p) > 5*sd {
		t.Errorf("%d of %d dropped at loss %v (expected %v ± %.0f)", up.Dropped, n, p, n*p, 5*sd)
	}
	b, _ := send(t, Config{Up: Path{Loss: p}, Seed: 7}, n)
	if !slices.Equal(a, b) {
		t.Errorf("the same seed let different datagrams through (%d and %d arrived)", len(a), len(b))
	}
	c, _ := send(t, Config{Up: Path{Loss: p}, Seed: 8}, n)
	if slices.Equal(a, c) {
		t.Errorf("seeds 7 and 8 dropped the same datagrams")
	}
}

// TestDelayAndReorder: every datagram waits at least Delay; Jitter
// reorders them, and the counter says by exactly how many.
func TestDelayAndReorder(t *testing.T) {
	tc, _ := target(t, true)
	const delay = 30 * time.Millisecond
	r := start(t, Config{Target: tc.LocalAddr().(*net.UDPAddr), Up: Path{Delay: delay}})
	c := client(t, r)
	t0 := time.Now()
	c.Write(numbered(1))
	recv(t, c)
	if took := time.Since(t0); took < delay {
		t.Errorf("a round trip took %v through a delay of %v", took, delay)
	}

	// Every delayed datagram is timed against its due time: one, not late
	// by more than it took to arrive.
	up, _ := r.Stats()
	if up.Late != 1 || up.LateSum != up.LateMax || up.LateMax < 0 || up.LateMax > time.Since(t0)-delay {
		t.Errorf("late %d, sum %v, max %v for one datagram delayed %v that arrived after %v", up.Late, up.LateSum, up.LateMax, delay, time.Since(t0))
	}

	const n = 500
	a, r2 := send(t, Config{Up: Path{Delay: time.Millisecond, Jitter: 5 * time.Millisecond}, Seed: 1}, n)
	if len(a) != n {
		t.Fatalf("%d of %d arrived without loss", len(a), n)
	}
	var late, hi = 0, -1
	for _, i := range a {
		if i < hi {
			late++
		}
		hi = max(hi, i)
	}
	up, _ = r2.Stats()
	if late == 0 || uint64(late) != up.Reordered {
		t.Errorf("%d datagrams arrived after a later one; the relay counted %d", late, up.Reordered)
	}
}

// TestCloseEndsGoroutines: Close returns after every goroutine of the relay
// (readers, delay queues) has ended, with datagrams still waiting.
func TestCloseEndsGoroutines(t *testing.T) {
	tc, _ := target(t, true)
	r, err := New(Config{Target: tc.LocalAddr().(*net.UDPAddr), Up: Path{Delay: time.Hour}, Down: Path{Jitter: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, r)
	c.Write(numbered(1))
	deadline := time.Now().Add(10 * time.Second)
	for queued := 0; queued == 0 && time.Now().Before(deadline); runtime.Gosched() {
		r.up.mu.Lock()
		queued = r.up.q.Len()
		r.up.mu.Unlock()
	}
	if n := r.running.Load(); n != 4 {
		t.Errorf("%d goroutines while running, want 4 (reader, client reader, two queues)", n)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := r.running.Load(); n != 0 {
		t.Errorf("%d goroutines left after Close", n)
	}
	if up, _ := r.Stats(); up.Forwarded != 0 {
		t.Errorf("a datagram delayed by an hour was forwarded: %+v", up)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestRecords: with Config.Record, each forwarded datagram has a Record in
// its direction; the model's delay runs from the datagram's arrival (the
// kernel's timestamp, before the relay read it), so Due is exactly Delay
// after Arrived, and the relay's own lateness is what comes on top.
func TestRecords(t *testing.T) {
	tc, _ := target(t, true)
	r := start(t, Config{Target: tc.LocalAddr().(*net.UDPAddr), Up: Path{Delay: 3 * time.Millisecond}, Record: true})
	c := client(t, r)
	for i := range 20 {
		c.Write(numbered(i))
		recv(t, c)
	}
	up, down := r.Records()
	if len(up) != 20 || len(down) != 20 {
		t.Fatalf("%d up and %d down records, want 20 each", len(up), len(down))
	}
	for _, x := range up {
		if x.Due.Sub(x.Arrived) != 3*time.Millisecond || x.Read.Before(x.Arrived) || x.Sent.Before(x.Due) || x.Len != 4 {
			t.Fatalf("up record %+v: want Due = Arrived + 3ms, Read ≥ Arrived, Sent ≥ Due, Len 4", x)
		}
	}
	for _, x := range down {
		if x.Read.Before(x.Arrived) || x.Sent.Before(x.Read) {
			t.Fatalf("down record %+v: want Arrived ≤ Read ≤ Sent", x)
		}
	}
}
