package hostile

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/wire"
)

// frames concatenates the frames of payloads, for one write.
func frames(payloads ...[]byte) []byte {
	var b []byte
	for _, p := range payloads {
		b = wire.AppendFrame(b, p)
	}
	return b
}

// pingEcho checks that p's session still answers a ping, after whatever it
// sent before (the server answers in order of reading).
func (e *env) pingEcho(p *Peer, id int) {
	e.t.Helper()
	p.WriteFrame(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	for {
		r, err := p.ReadReply(e.ctx)
		if err != nil {
			e.t.Fatalf("the attacker's own ping: %v; server stderr:\n%s", err, e.srv.Stderr)
		}
		if r.ID == fmt.Sprint(id) {
			if r.Code != 0 {
				e.t.Fatalf("the attacker's own ping: %d %s", r.Code, r.Message)
			}
			return
		}
	}
}

// TestNotificationFlood: an initialized session sends 100,000 notifications
// (unknown and known methods) as fast as it can write them. The server
// reads through them at a bounded cost: others' pings stay fast, the flood
// leaves no memory behind, and the flooder's own ping is answered after it.
// (The issue sent 3M; 100k keeps the suite short.)
func TestNotificationFlood(t *testing.T) {
	e := setup(t)
	const n = 100_000
	kinds := [][]byte{
		[]byte(`{"jsonrpc":"2.0","method":"notifications/hostile","params":{"x":1}}`),
		[]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`),
		[]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99,"reason":"x"}}`),
		[]byte(`{"jsonrpc":"2.0","method":"$/cancel","params":{"requestId":98}}`),
	}
	chunk := make([][]byte, 0, 1000)
	for i := range cap(chunk) {
		chunk = append(chunk, kinds[i%len(kinds)])
	}
	burst := frames(chunk...)
	p := e.initPeer()
	e.during(func() {
		for range n / len(chunk) {
			if err := p.Write(burst); err != nil {
				t.Fatal(err)
			}
		}
		e.pingEcho(p, 1)
	})
	m, cpu := e.report()
	t.Logf("measured: %d notifications (%s) took %.2f CPU-seconds of the server", n, mib(int64(n/len(chunk)*len(burst))), cpu.Seconds())
	if d := m.RSS - e.base.RSS; d > 64<<20 {
		t.Errorf("the flood left the server's RSS %s higher", mib(d))
	}
	e.alive()
}

// TestSlowlorisBeforeInitialize: 100 sessions each send three bytes of a
// frame length and nothing more. They hold nobody up (others' pings, a new
// session's initialize) and the handshake timeout (here 1 s,
// -handshake-timeout) ends each of them.
func TestSlowlorisBeforeInitialize(t *testing.T) {
	const handshake = time.Second
	e := setup(t, "-handshake-timeout", handshake.String())
	var slow []*Peer
	t0 := time.Now()
	e.during(func() {
		for range 100 {
			p := e.peer()
			p.Write([]byte{0, 0, 0x10})
			slow = append(slow, p)
		}
		e.initPeer()
	})
	for i, p := range slow {
		select {
		case <-p.Done():
		case <-e.ctx.Done():
			t.Fatalf("slow session %d still open %v after it started (handshake timeout %v)", i, time.Since(t0), handshake)
		}
	}
	t.Logf("measured: 100 slowloris sessions all ended %v after the first began (handshake timeout %v)", time.Since(t0).Round(time.Millisecond), handshake)
	if took := time.Since(t0); took > handshake+5*time.Second {
		t.Errorf("the slow sessions took %v to end, handshake timeout %v", took, handshake)
	}
	e.report()
	e.alive()
}

// TestDatagramFlood: on a session that refused datagrams, 5,000 of them
// cost at most one -32004 a second (spec §6, §9); on one that took them,
// 5,000 malformed datagrams are dropped; before initialize, 5,000 go
// unread. Others' pings stay fast; the sessions live on.
func TestDatagramFlood(t *testing.T) {
	e := setup(t)
	early, pre, post := e.peer(), e.initPeerDatagrams(false), e.initPeer()
	junk := bytes.Repeat([]byte{0xa5}, 1000)
	var sent time.Duration
	replies := make(chan int, 1)
	stopRead, cancelRead := context.WithCancel(e.ctx)
	defer cancelRead()
	go func() {
		n := 0
		for {
			r, err := pre.ReadReply(stopRead)
			if err != nil {
				replies <- n
				return
			}
			if r.Code == codeNoDatagrams {
				n++
			}
		}
	}()
	e.during(func() {
		for range 5_000 {
			if err := early.SendDatagram(junk); err != nil {
				t.Fatal(err)
			}
		}
		t0 := time.Now()
		for range 5_000 {
			if err := pre.SendDatagram(junk); err != nil {
				t.Fatal(err)
			}
		}
		sent = time.Since(t0)
		for i := range 5_000 {
			binary.BigEndian.PutUint32(junk[2:], uint32(i))
			if err := post.SendDatagram(junk); err != nil {
				t.Fatal(err)
			}
		}
		e.pingEcho(post, 1)
	})
	// Replies to the last datagrams may still be coming: read for one more
	// second (the rate limit's period) after the flood.
	readFor, cancelFor := context.WithTimeout(e.ctx, time.Second)
	defer cancelFor()
	<-readFor.Done()
	cancelRead()
	n := <-replies
	want := int(sent/time.Second) + 2
	t.Logf("measured: 5,000 datagrams on a session without datagrams, sent in %v, got %d -32004 replies", sent.Round(time.Millisecond), n)
	if n < 1 || n > want {
		t.Errorf("5,000 datagrams on a session without datagrams over %v got %d -32004 replies, want 1 to %d", sent, n, want)
	}
	e.pingEcho(early, 2)
	e.report()
	e.alive()
}

// TestCallsThenCancelAll: 2,000 calls of the slow tool, then $/cancel for
// each. Every request is answered exactly once: -32005 past the 256 in
// flight (spec §8), -32800 for the cancelled. The server's threads and
// memory come back down.
func TestCallsThenCancelAll(t *testing.T) {
	e := setup(t)
	const n = 2000
	p := e.initPeer()
	var calls, cancels [][]byte
	for i := 1; i <= n; i++ {
		calls = append(calls, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{"steps":100,"delayMs":100}}}`, i))
		cancels = append(cancels, fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"$/cancel","params":{"requestId":%d,"reason":"hostile"}}`, i))
	}
	got := map[int]int{}
	e.during(func() {
		if err := p.Write(frames(calls...)); err != nil {
			t.Fatal(err)
		}
		if err := p.Write(frames(cancels...)); err != nil {
			t.Fatal(err)
		}
		for len(got) < n {
			r, err := p.ReadReply(e.ctx)
			if err != nil {
				t.Fatalf("after %d replies: %v; server stderr:\n%s", len(got), err, e.srv.Stderr)
			}
			if r.Method != "" {
				continue
			}
			var id int
			if _, err := fmt.Sscan(r.ID, &id); err != nil || id < 1 || id > n {
				t.Fatalf("a reply with id %s", r.ID)
			}
			if _, dup := got[id]; dup {
				t.Fatalf("request %d answered twice", id)
			}
			got[id] = r.Code
		}
	})
	count := map[int]int{}
	for _, c := range got {
		count[c]++
	}
	t.Logf("measured: %d calls then cancel-all: %d cancelled (-32800), %d refused (-32005)", n, count[codeCancelled], count[codeTooMany])
	if count[codeCancelled]+count[codeTooMany] != n || count[codeCancelled] > 256 || count[codeCancelled] == 0 {
		t.Errorf("replies by code: %v, want -32800 (at most 256) and -32005 only", count)
	}
	e.pingEcho(p, n+1)
	m, _ := e.report()
	if m.Threads > e.base.Threads+16 {
		t.Errorf("the server has %d threads after the calls ended, %d before", m.Threads, e.base.Threads)
	}
	e.alive()
}

// TestShutdownBeforeInitialize: $/shutdown sent before initialize, then a
// request: the request is answered, not left without an answer (issue 11
// finding 6). $/shutdown before READY is itself refused (-32600, id null;
// spec §2: there is nothing to drain), the request gets -32600 (not
// initialized), and the session then initializes.
func TestShutdownBeforeInitialize(t *testing.T) {
	e := setup(t)
	p := e.peer()
	e.during(func() {
		p.Write(frames([]byte(`{"jsonrpc":"2.0","method":"$/shutdown","params":{"reason":"hostile"}}`),
			[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
		for {
			r, err := p.ReadReply(e.ctx)
			if err != nil {
				t.Fatalf("the request after $/shutdown before initialize got no answer: %v; server stderr:\n%s", err, e.srv.Stderr)
			}
			if r.Method != "" {
				continue
			}
			if r.ID == "null" && r.Code == codeInvalid {
				t.Logf("$/shutdown before initialize: %d %q", r.Code, r.Message)
				continue
			}
			if r.ID != "1" || r.Code != codeInvalid {
				t.Fatalf("the request after $/shutdown before initialize got id %s code %d %q, want -32600", r.ID, r.Code, r.Message)
			}
			break
		}
		if err := p.InitializeJSONSession(e.ctx, true); err != nil {
			t.Fatalf("initialize after $/shutdown before initialize: %v", err)
		}
		e.pingEcho(p, 2)
	})
	e.alive()
}

// TestShutdownWithClientThatNeverReads: a client sends 16 echo calls of 1
// MiB each and never reads its control stream; the server gets SIGTERM
// with -drain 1s. The drain deadline starts with the shutdown and no write
// blocks past it: the server exits within the drain deadline (plus 3 s of
// slack on this loaded machine), and a well-behaved session is shut down
// (issue 11 finding 5: SIGTERM hung for minutes).
func TestShutdownWithClientThatNeverReads(t *testing.T) {
	const drain = time.Second
	e := setup(t, "-drain", drain.String())
	p := e.initPeer()
	text := strings.Repeat("y", 1<<20)
	var reqs [][]byte
	for i := 1; i <= 16; i++ {
		reqs = append(reqs, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}`, i, text))
	}
	if err := p.Write(frames(reqs...)); err != nil {
		t.Fatal(err)
	}
	// The write returned once QUIC flow control let all but the server's
	// receive window (at most a few MiB) through, so most calls have been
	// read: their 1 MiB replies overfill the client's window whether they
	// are being answered or not.
	e.alive()
	t0 := time.Now()
	if err := e.srv.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, drain+3*time.Second)
	defer cancel()
	err := e.srv.Wait(ctx)
	took := time.Since(t0)
	if err == ErrStillRunning {
		t.Fatalf("the server is still running %v after SIGTERM (drain %v) with a client that never reads; stderr:\n%s", took, drain, e.srv.Stderr)
	}
	t.Logf("measured: SIGTERM with a client that never reads: exited after %v (%v), drain %v", took.Round(time.Millisecond), err, drain)
	select {
	case <-e.obs.S.Done():
	case <-ctx.Done():
		t.Errorf("the observer's session is still open after the server exited")
	}
}
