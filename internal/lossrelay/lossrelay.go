// Package lossrelay is a UDP relay that loses, delays and reorders
// datagrams on purpose, per direction, so that tests can run real QUIC
// through a bad path on loopback. With a Rate it models a bottleneck link:
// a serializer at that rate behind a drop-tail queue of Queue bytes, then
// the propagation Delay. NewTCP relays TCP through the same bottleneck
// model, so that a TCP transport can be measured on the same shaped link.
//
// A Relay listens on 127.0.0.1 and forwards what each client sends to one
// target from a socket of the client's own (as a NAT does), and what the
// target answers back to that client. Its random choices come from a seeded
// generator per direction, so a run's losses depend only on the seed and the
// order the datagrams arrive in. Counters say what it did.
package lossrelay

import (
	"container/heap"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Path is what one direction does to the datagrams it carries.
type Path struct {
	// Loss is the probability that a datagram is dropped, from 0 to 1.
	Loss float64
	// Delay is added to every datagram.
	Delay time.Duration
	// Jitter adds a uniform random delay in [0, Jitter) to each datagram on
	// top of Delay, so that datagrams overtake each other: reordering.
	Jitter time.Duration
	// Rate, when set, is the bottleneck's rate in bytes per second: each
	// datagram leaves the bottleneck len/Rate after the one before it (or
	// after it arrives, if the link is idle), then takes Delay to arrive.
	// All the clients of a Relay share one bottleneck per direction.
	Rate float64
	// Queue bounds, with a Rate, the bytes waiting for the bottleneck: a
	// datagram that would make the backlog exceed it is dropped (drop-tail,
	// counted in QueueDropped). Zero: no bound. About one bandwidth-delay
	// product (Rate × round trip) is the classic size.
	Queue int
}

// BDP returns the bytes a link of rate bytes/s carries in rtt.
func BDP(rate float64, rtt time.Duration) int { return int(rate * rtt.Seconds()) }

// Config configures a Relay.
type Config struct {
	// Target is the UDP address the relay forwards to. Required.
	Target *net.UDPAddr
	// Up applies to datagrams from clients to Target, Down to the answers.
	Up, Down Path
	// Seed seeds the random choices (each direction has its own generator).
	Seed uint64
	// Record keeps a Record of every datagram each direction forwards
	// (Records), for an account of where a datagram's time went.
	Record bool
}

// A Record is the life of one forwarded datagram in the relay: when it
// reached the relay's socket (the kernel's receive timestamp, where the
// platform gives one; else when the relay read it), when the relay read it,
// when the model (Delay, Jitter, Rate and the queue) said it should leave,
// and when the relay sent it. Read−Arrived and Sent−Due are the relay's own
// lateness, Due−Arrived the model's delay (its queue wait: Due−Arrived−
// Delay−len/Rate).
type Record struct {
	Arrived, Read, Due, Sent time.Time
	Len                      int
}

// Counters count what one direction did. Forwarded + Dropped +
// QueueDropped datagrams arrived; Reordered of the Forwarded ones left after
// a datagram that had arrived later than them.
type Counters struct {
	Forwarded, Dropped, Reordered uint64
	// QueueDropped counts the datagrams the full bottleneck queue dropped
	// (Path.Queue).
	QueueDropped uint64
	// Bytes is the payload forwarded.
	Bytes uint64
	// QueueDelayMax and QueueDelaySum are the longest and the total time
	// that forwarded datagrams (or TCP chunks) waited in the bottleneck
	// queue before their serialization began (Path.Rate).
	QueueDelayMax, QueueDelaySum time.Duration
	// LateMax and LateSum are the longest and the total time by which
	// delayed datagrams left the relay after they were due (Delay, Jitter,
	// Rate): what the relay's own scheduling added to the model, so that a
	// relay starved of CPU shows as such rather than as the link.
	LateMax, LateSum time.Duration
	// Late counts the datagrams LateSum is over (those delayed).
	Late uint64
	// ReadLateMax and ReadLateSum are the longest and the total time that
	// forwarded datagrams waited in the relay's socket before it read them
	// (from the kernel's receive timestamp, where the platform gives one):
	// the relay's input lateness, which the model does not add either. The
	// bottleneck admits a datagram at its arrival, so this lateness is
	// also in LateSum for delayed datagrams.
	ReadLateMax, ReadLateSum time.Duration
}

// Relay is a running relay. Its methods are safe for concurrent use.
type Relay struct {
	cfg      Config
	ln       *net.UDPConn
	up, down *direction
	wg       sync.WaitGroup
	running  atomic.Int32 // goroutines started by go and not yet ended
	done     chan struct{}

	mu      sync.Mutex
	clients map[string]*net.UDPConn // client address → its socket towards Target
	closed  bool
}

// bufferSize is asked of the kernel for each socket, so that the relay does
// not lose more than it is told to.
const bufferSize = 4 << 20

// New starts a relay on 127.0.0.1 (a free port) towards cfg.Target.
func New(cfg Config) (*Relay, error) {
	if cfg.Target == nil {
		return nil, errors.New("lossrelay: Config.Target is required")
	}
	if err := checkPaths(cfg.Up, cfg.Down); err != nil {
		return nil, err
	}
	ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	_ = ln.SetReadBuffer(bufferSize)
	_ = ln.SetWriteBuffer(bufferSize)
	enableRxTime(ln)
	r := &Relay{cfg: cfg, ln: ln, done: make(chan struct{}), clients: map[string]*net.UDPConn{}}
	r.up = r.newDirection(cfg.Up, cfg.Seed)
	r.down = r.newDirection(cfg.Down, cfg.Seed^0x9e3779b97f4a7c15)
	r.spawn(r.readClients)
	return r, nil
}

// Addr is the address clients send to.
func (r *Relay) Addr() *net.UDPAddr { return r.ln.LocalAddr().(*net.UDPAddr) }

// Stats returns the counters of each direction.
func (r *Relay) Stats() (up, down Counters) { return r.up.counters(), r.down.counters() }

// Close stops the relay: it closes every socket and returns once all its
// goroutines have ended. Datagrams still delayed are dropped.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.done)
	err := r.ln.Close()
	for _, c := range r.clients {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

// spawn runs f on a goroutine that Close waits for.
func (r *Relay) spawn(f func()) {
	r.running.Add(1)
	r.wg.Go(func() {
		defer r.running.Add(-1)
		f()
	})
}

// readClients reads what clients send and passes it up.
func (r *Relay) readClients() {
	buf := make([]byte, 64<<10)
	oob := make([]byte, rxTimeOOB)
	for {
		n, from, arrived, err := readStamped(r.ln, buf, oob)
		if err != nil {
			return // closed
		}
		c := r.clientConn(from)
		if c == nil {
			return
		}
		r.up.carry(buf[:n], arrived, func(b []byte) { c.Write(b) })
	}
}

// readStamped reads a datagram from c with the time it arrived (the
// kernel's timestamp where there is one, else now).
func readStamped(c *net.UDPConn, buf, oob []byte) (int, *net.UDPAddr, time.Time, error) {
	n, oobn, _, from, err := c.ReadMsgUDP(buf, oob)
	if err != nil {
		return 0, nil, time.Time{}, err
	}
	at, ok := parseRxTime(oob[:oobn])
	if !ok {
		at = time.Now()
	}
	return n, from, at, nil
}

// clientConn returns the socket towards Target for a client, made (with
// its reading goroutine) on the client's first datagram; nil once closed.
func (r *Relay) clientConn(from *net.UDPAddr) *net.UDPConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	if c, ok := r.clients[from.String()]; ok {
		return c
	}
	c, err := net.DialUDP("udp", nil, r.cfg.Target)
	if err != nil {
		return nil
	}
	_ = c.SetReadBuffer(bufferSize)
	_ = c.SetWriteBuffer(bufferSize)
	enableRxTime(c)
	r.clients[from.String()] = c
	r.spawn(func() {
		buf := make([]byte, 64<<10)
		oob := make([]byte, rxTimeOOB)
		for {
			n, _, arrived, err := readStamped(c, buf, oob)
			if err != nil {
				return
			}
			r.down.carry(buf[:n], arrived, func(b []byte) { r.ln.WriteToUDP(b, from) })
		}
	})
	return c
}

func checkPaths(ps ...Path) error {
	for _, p := range ps {
		if p.Loss < 0 || p.Loss > 1 || p.Delay < 0 || p.Jitter < 0 || p.Rate < 0 || p.Queue < 0 {
			return errors.New("lossrelay: Loss must be in [0, 1], Delay, Jitter, Rate and Queue not negative")
		}
	}
	return nil
}

// bottleneck is the serializer of a Path with a Rate: free is when it has
// sent everything admitted so far.
type bottleneck struct {
	rate  float64
	queue int
	mu    sync.Mutex
	free  time.Time

	dropped  atomic.Uint64
	delayMax atomic.Int64
	delaySum atomic.Int64
}

// admit queues n bytes at now: it returns when they will have left the
// bottleneck, or ok false when the queue has no room for them (and then
// wait is how long until it has).
func (q *bottleneck) admit(n int, now time.Time) (departure time.Time, wait time.Duration, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.free.Before(now) {
		q.free = now
	}
	backlog := q.free.Sub(now)
	if q.queue > 0 {
		if over := backlog.Seconds()*q.rate + float64(n) - float64(q.queue); over > 0 {
			return time.Time{}, time.Duration(over / q.rate * float64(time.Second)), false
		}
	}
	q.free = q.free.Add(time.Duration(float64(n) / q.rate * float64(time.Second)))
	q.delaySum.Add(int64(backlog))
	for {
		m := q.delayMax.Load()
		if int64(backlog) <= m || q.delayMax.CompareAndSwap(m, int64(backlog)) {
			break
		}
	}
	return q.free, 0, true
}

// direction applies a Path. Datagrams that are not delayed are sent by the
// goroutine that read them; delayed ones wait in a queue that one goroutine
// per direction sends from when they are due.
type direction struct {
	path Path
	mu   sync.Mutex // rng, seq, queue, wake
	rng  *rand.Rand
	seq  uint64
	q    queue
	wake chan struct{}
	sent atomic.Uint64 // highest seq sent + 1
	bn   *bottleneck   // nil without a Rate

	forwarded, dropped, reordered, bytes atomic.Uint64
	late, lateSum, lateMax               atomic.Int64
	readLateSum, readLateMax             atomic.Int64

	record  bool
	recMu   sync.Mutex
	records []Record
	drops   []time.Time // arrival of each datagram the full queue dropped
}

// Records returns the records each direction has kept so far
// (Config.Record).
func (r *Relay) Records() (up, down []Record) { return r.up.kept(), r.down.kept() }

// QueueDrops returns, with Config.Record, when each datagram that a full
// bottleneck queue dropped arrived, in each direction.
func (r *Relay) QueueDrops() (up, down []time.Time) { return r.up.dropTimes(), r.down.dropTimes() }

func (d *direction) kept() []Record {
	d.recMu.Lock()
	defer d.recMu.Unlock()
	return append([]Record(nil), d.records...)
}

func (d *direction) dropTimes() []time.Time {
	d.recMu.Lock()
	defer d.recMu.Unlock()
	return append([]time.Time(nil), d.drops...)
}

func (r *Relay) newDirection(p Path, seed uint64) *direction {
	d := &direction{path: p, rng: rand.New(rand.NewPCG(seed, seed>>1|1)), wake: make(chan struct{}, 1), record: r.cfg.Record}
	if p.Rate > 0 {
		d.bn = &bottleneck{rate: p.Rate, queue: p.Queue}
	}
	if p.Delay > 0 || p.Jitter > 0 || p.Rate > 0 {
		r.spawn(func() { d.run(r.done) })
	}
	return d
}

func (d *direction) counters() Counters {
	c := Counters{Forwarded: d.forwarded.Load(), Dropped: d.dropped.Load(), Reordered: d.reordered.Load(), Bytes: d.bytes.Load(),
		Late: uint64(d.late.Load()), LateSum: time.Duration(d.lateSum.Load()), LateMax: time.Duration(d.lateMax.Load()),
		ReadLateSum: time.Duration(d.readLateSum.Load()), ReadLateMax: time.Duration(d.readLateMax.Load())}
	d.bn.count(&c)
	return c
}

// count adds the bottleneck's counters to c (none without a bottleneck).
func (q *bottleneck) count(c *Counters) {
	if q == nil {
		return
	}
	c.QueueDropped = q.dropped.Load()
	c.QueueDelayMax = time.Duration(q.delayMax.Load())
	c.QueueDelaySum = time.Duration(q.delaySum.Load())
}

// carry drops b, which arrived at arrived, sends it with send at once, or
// queues a copy for later.
func (d *direction) carry(b []byte, arrived time.Time, send func([]byte)) {
	read := time.Now()
	d.mu.Lock()
	seq := d.seq
	d.seq++
	if d.path.Loss > 0 && d.rng.Float64() < d.path.Loss {
		d.mu.Unlock()
		d.dropped.Add(1)
		return
	}
	delay := d.path.Delay
	if d.path.Jitter > 0 {
		delay += time.Duration(d.rng.Int64N(int64(d.path.Jitter)))
	}
	start := arrived
	if d.bn != nil {
		dep, _, ok := d.bn.admit(len(b), start)
		if !ok {
			d.mu.Unlock()
			d.bn.dropped.Add(1)
			if d.record {
				d.recMu.Lock()
				d.drops = append(d.drops, arrived)
				d.recMu.Unlock()
			}
			return
		}
		start = dep
	} else if delay == 0 {
		d.mu.Unlock()
		d.send(&packet{arrived: arrived, read: read, seq: seq, b: b, send: send})
		return
	}
	heap.Push(&d.q, &packet{arrived: arrived, read: read, due: start.Add(delay), seq: seq, b: append([]byte(nil), b...), send: send})
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// send counts one datagram and sends it.
func (d *direction) send(p *packet) {
	for {
		hi := d.sent.Load()
		if p.seq+1 <= hi {
			d.reordered.Add(1)
			break
		}
		if d.sent.CompareAndSwap(hi, p.seq+1) {
			break
		}
	}
	// Counted first, so that whoever sees the datagram arrive sees it counted.
	d.forwarded.Add(1)
	d.bytes.Add(uint64(len(p.b)))
	rl := int64(max(p.read.Sub(p.arrived), 0))
	d.readLateSum.Add(rl)
	for {
		m := d.readLateMax.Load()
		if rl <= m || d.readLateMax.CompareAndSwap(m, rl) {
			break
		}
	}
	now := time.Now()
	if !p.due.IsZero() {
		late := int64(max(now.Sub(p.due), 0))
		d.late.Add(1)
		d.lateSum.Add(late)
		if late > d.lateMax.Load() {
			d.lateMax.Store(late) // one goroutine per direction sends delayed datagrams
		}
	}
	if d.record {
		due := p.due
		if due.IsZero() {
			due = now
		}
		d.recMu.Lock()
		d.records = append(d.records, Record{Arrived: p.arrived, Read: p.read, Due: due, Sent: now, Len: len(p.b)})
		d.recMu.Unlock()
	}
	p.send(p.b)
}

// run sends queued datagrams when they are due, until done.
func (d *direction) run(done <-chan struct{}) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		d.mu.Lock()
		var next time.Duration = time.Hour
		var due []*packet
		now := time.Now()
		for d.q.Len() > 0 {
			p := d.q[0]
			if wait := p.due.Sub(now); wait > 0 {
				next = wait
				break
			}
			due = append(due, heap.Pop(&d.q).(*packet))
		}
		d.mu.Unlock()
		for _, p := range due {
			d.send(p)
		}
		t.Reset(next)
		select {
		case <-done:
			return
		case <-d.wake:
		case <-t.C:
		}
	}
}

type packet struct {
	arrived, read time.Time
	due           time.Time // zero: not delayed
	seq           uint64
	b             []byte
	send          func([]byte)
}

// queue is a min-heap of packets by due time, then arrival.
type queue []*packet

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].due.Equal(q[j].due) {
		return q[i].seq < q[j].seq
	}
	return q[i].due.Before(q[j].due)
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*packet)) }
func (q *queue) Pop() any {
	old := *q
	p := old[len(old)-1]
	*q = old[:len(old)-1]
	return p
}
