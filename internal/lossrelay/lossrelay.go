// Package lossrelay is a UDP relay that loses, delays and reorders
// datagrams on purpose, per direction, so that tests can run real QUIC
// through a bad path on loopback. With a Rate it models a bottleneck link:
// a serializer at that rate behind a drop-tail queue of Queue bytes, then
// the propagation Delay. NewTCP relays TCP through the same bottleneck
// model, so that a TCP transport can be measured on the same shaped link.
//
// A Relay listens on 127.0.0.1 and forwards what each client sends to one
// target from a socket of the client's own (as a NAT does), and what the
// target answers back to that client. Rebind gives each client a new
// socket towards the target mid-flow, as a NAT that rebinds does. Its random choices come from a seeded
// generator per direction, so a run's losses depend only on the seed and the
// order the datagrams arrive in. Counters say what it did.
package lossrelay

import (
	"errors"
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
	// Listen is the address the relay listens on; nil: a free port on
	// 127.0.0.1.
	Listen *net.UDPAddr
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
	clients map[string]*mapping // by the client's address
	closed  bool
}

// mapping is one client of the relay, as a NAT's mapping: the socket its
// datagrams leave from towards Target, which Rebind replaces.
type mapping struct {
	from *net.UDPAddr
	seq  int // the clients before it
	out  atomic.Pointer[binding]
}

// binding is a mapping's socket towards Target, with the bytes Target sent
// to it.
type binding struct {
	*net.UDPConn
	received atomic.Uint64
}

// A Mapping is one client of a Relay as the target sees it (Mappings).
type Mapping struct {
	// Client is the client's address, Outward the relay's socket that
	// carries its datagrams to the target (Rebind replaces it).
	Client, Outward *net.UDPAddr
	// Received counts the bytes the target sent to Outward (before Down's
	// losses).
	Received uint64
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
	at := cfg.Listen
	if at == nil {
		at = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	}
	ln, err := net.ListenUDP("udp", at)
	if err != nil {
		return nil, err
	}
	_ = ln.SetReadBuffer(bufferSize)
	_ = ln.SetWriteBuffer(bufferSize)
	enableRxTime(ln)
	r := &Relay{cfg: cfg, ln: ln, done: make(chan struct{}), clients: map[string]*mapping{}}
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
		c.out.Load().Close()
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
		c := r.mapping(from)
		if c == nil {
			return
		}
		// The socket is looked up when the datagram leaves: one delayed
		// across a Rebind leaves from the new one.
		r.up.carry(buf[:n], arrived, func(b []byte) { c.out.Load().Write(b) })
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

// mapping returns a client's mapping, made (with the socket towards Target
// and its reading goroutine) on its first datagram; nil once closed.
func (r *Relay) mapping(from *net.UDPAddr) *mapping {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	if c, ok := r.clients[from.String()]; ok {
		return c
	}
	c := &mapping{from: from, seq: len(r.clients)}
	if err := r.bind(c); err != nil {
		return nil
	}
	r.clients[from.String()] = c
	return c
}

// bind gives c a new socket towards Target (from a new port), with the
// goroutine that carries what Target sends to it back to the client, and
// closes the socket it replaces. Called with mu held.
func (r *Relay) bind(c *mapping) error {
	conn, err := net.DialUDP("udp", nil, r.cfg.Target)
	if err != nil {
		return err
	}
	_ = conn.SetReadBuffer(bufferSize)
	_ = conn.SetWriteBuffer(bufferSize)
	enableRxTime(conn)
	out := &binding{UDPConn: conn}
	r.spawn(func() {
		buf := make([]byte, 64<<10)
		oob := make([]byte, rxTimeOOB)
		for {
			n, _, arrived, err := readStamped(conn, buf, oob)
			if err != nil {
				return
			}
			out.received.Add(uint64(n))
			r.down.carry(buf[:n], arrived, func(b []byte) { r.ln.WriteToUDP(b, c.from) })
		}
	})
	if old := c.out.Swap(out); old != nil {
		old.Close()
	}
	return nil
}

// Rebind gives every client a new socket towards Target, from a new port,
// and closes the old one, as a NAT that drops a mapping and makes a new
// one does: the target sees each client's next datagram come from a new
// address, and what it still sends to the old one is lost. It returns the
// new addresses the target sees, by the client's address.
func (r *Relay) Rebind() (map[string]*net.UDPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, net.ErrClosed
	}
	seen := map[string]*net.UDPAddr{}
	for k, c := range r.clients {
		if err := r.bind(c); err != nil {
			return seen, err
		}
		seen[k] = c.out.Load().LocalAddr().(*net.UDPAddr)
	}
	return seen, nil
}

// Mappings returns the relay's clients as the target sees them now, in the
// order they first sent.
func (r *Relay) Mappings() []Mapping {
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := make([]Mapping, len(r.clients))
	for _, c := range r.clients {
		b := c.out.Load()
		ms[c.seq] = Mapping{Client: c.from, Outward: b.LocalAddr().(*net.UDPAddr), Received: b.received.Load()}
	}
	return ms
}

func checkPaths(ps ...Path) error {
	for _, p := range ps {
		if p.Loss < 0 || p.Loss > 1 || p.Delay < 0 || p.Jitter < 0 || p.Rate < 0 || p.Queue < 0 {
			return errors.New("lossrelay: Loss must be in [0, 1], Delay, Jitter, Rate and Queue not negative")
		}
	}
	return nil
}

// Records returns the records each direction has kept so far
// (Config.Record).
func (r *Relay) Records() (up, down []Record) { return r.up.kept(), r.down.kept() }

// QueueDrops returns, with Config.Record, when each datagram that a full
// bottleneck queue dropped arrived, in each direction.
func (r *Relay) QueueDrops() (up, down []time.Time) { return r.up.dropTimes(), r.down.dropTimes() }
