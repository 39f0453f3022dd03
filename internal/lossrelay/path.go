package lossrelay

import (
	"container/heap"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

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
