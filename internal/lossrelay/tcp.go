package lossrelay

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// TCPRelay relays TCP connections to one target through the bottleneck
// model of a Path (Rate, Queue, Delay; Loss and Jitter do not apply: TCP
// hides loss, and reordering within a byte stream cannot happen). It is a
// split connection, as a TCP proxy is: each leg is loopback TCP, and the
// bottleneck sits between them. All the connections share one bottleneck
// per direction. When the queue is full the relay stops reading from the
// sender (TCP cannot drop), so the sender's own socket buffer then holds
// what would wait at a real bottleneck; the relay's sockets keep small
// buffers (tcpBuffer) so that they add little queue of their own.
type TCPRelay struct {
	ln       net.Listener
	target   string
	up, down *tcpDirection
	done     chan struct{}
	wg       sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// tcpBuffer is the kernel buffer asked for each of the relay's sockets,
// and the largest chunk it reads at once.
const tcpBuffer = 64 << 10

type tcpDirection struct {
	path             Path
	bn               *bottleneck
	forwarded, bytes uint64        // guarded by mu
	late             uint64        // guarded by mu
	lateSum, lateMax time.Duration // guarded by mu
	mu               sync.Mutex
}

// NewTCP starts a TCP relay on 127.0.0.1 (a free port) towards target.
func NewTCP(target string, up, down Path) (*TCPRelay, error) {
	return NewTCPAt("127.0.0.1:0", target, up, down)
}

// NewTCPAt is NewTCP listening on addr.
func NewTCPAt(addr, target string, up, down Path) (*TCPRelay, error) {
	if err := checkPaths(up, down); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &TCPRelay{ln: ln, target: target, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	r.up, r.down = newTCPDirection(up), newTCPDirection(down)
	r.wg.Go(r.accept)
	return r, nil
}

func newTCPDirection(p Path) *tcpDirection {
	d := &tcpDirection{path: p}
	if p.Rate > 0 {
		d.bn = &bottleneck{rate: p.Rate, queue: p.Queue}
	}
	return d
}

// Addr is the address clients connect to.
func (r *TCPRelay) Addr() net.Addr { return r.ln.Addr() }

// Stats returns the counters of each direction (chunks, not datagrams:
// Forwarded counts the reads relayed).
func (r *TCPRelay) Stats() (up, down Counters) { return r.up.counters(), r.down.counters() }

func (d *tcpDirection) counters() Counters {
	d.mu.Lock()
	c := Counters{Forwarded: d.forwarded, Bytes: d.bytes, Late: d.late, LateSum: d.lateSum, LateMax: d.lateMax}
	d.mu.Unlock()
	d.bn.count(&c)
	return c
}

// Close stops the relay, closes every connection and returns once all its
// goroutines have ended.
func (r *TCPRelay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.done)
	err := r.ln.Close()
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

// track records c so that Close closes it; false once closed.
func (r *TCPRelay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *TCPRelay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

func (r *TCPRelay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		if !r.track(c) {
			return
		}
		r.wg.Go(func() {
			defer r.untrack(c)
			t, err := net.Dial("tcp", r.target)
			if err != nil {
				return
			}
			if !r.track(t) {
				return
			}
			defer r.untrack(t)
			for _, s := range []net.Conn{c, t} {
				s.(*net.TCPConn).SetReadBuffer(tcpBuffer)
				s.(*net.TCPConn).SetWriteBuffer(tcpBuffer)
				s.(*net.TCPConn).SetNoDelay(true)
			}
			var legs sync.WaitGroup
			legs.Go(func() { r.pump(r.up, c, t) })
			legs.Go(func() { r.pump(r.down, t, c) })
			legs.Wait()
		})
	}
}

type chunk struct {
	due time.Time
	b   []byte
}

// pump carries src to dst through d: a reader admits chunks to the
// bottleneck (waiting while its queue is full) and a writer sends each one
// when it is due. At src's EOF it half-closes dst; on an error it closes
// both.
func (r *TCPRelay) pump(d *tcpDirection, src, dst net.Conn) {
	q := make(chan chunk, 4096)
	var w sync.WaitGroup
	w.Go(func() {
		t := time.NewTimer(time.Hour)
		defer t.Stop()
		for c := range q {
			if wait := time.Until(c.due); wait > 0 {
				t.Reset(wait)
				select {
				case <-t.C:
				case <-r.done:
					for range q { // the reader fails on its closed conn
					}
					return
				}
			}
			late := time.Since(c.due)
			d.mu.Lock()
			d.late++
			d.lateSum += late
			d.lateMax = max(d.lateMax, late)
			d.mu.Unlock()
			if _, err := dst.Write(c.b); err != nil {
				src.Close()
				for range q {
				}
				return
			}
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	})
	defer w.Wait()
	defer close(q)
	size := tcpBuffer
	if d.bn != nil && d.bn.queue > 0 {
		size = min(size, d.bn.queue) // a chunk must fit an empty queue
	}
	buf := make([]byte, size)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			due, ok := r.admit(d, n)
			if !ok {
				return
			}
			d.mu.Lock()
			d.forwarded++
			d.bytes += uint64(n)
			d.mu.Unlock()
			q <- chunk{due: due.Add(d.path.Delay), b: append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				dst.Close()
			}
			return
		}
	}
}

// admit waits for room in d's queue for n bytes and returns when they will
// have left the bottleneck; false when the relay closes meanwhile.
func (r *TCPRelay) admit(d *tcpDirection, n int) (time.Time, bool) {
	if d.bn == nil {
		return time.Now(), true
	}
	for {
		dep, wait, ok := d.bn.admit(n, time.Now())
		if ok {
			return dep, true
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.done:
			t.Stop()
			return time.Time{}, false
		}
	}
}
