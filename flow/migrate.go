package flow

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/quic-go/quic-go"
)

// ErrNoMigration is Session.Migrate's error on a session whose QUIC
// connection Dial did not make itself (a server session, one dialled
// through ClientConfig.Transport or DialSession): it has no sockets of its
// own to move between (spec §2.1).
var ErrNoMigration = errors.New("flow: this session cannot migrate: Dial did not make its QUIC connection")

// clientConn is the QUIC connection Dial made (webtransport.Transport's
// DialAddr), with the UDP sockets it owns: the first, and one more for each
// migration (spec §2.1). quic-go's own DialAddr would make a single-use
// transport whose connection IDs are empty, and a connection without
// connection IDs cannot be found on a second socket: so Dial makes a
// quic.Transport of its own on each socket, with quic-go's default 4-byte
// connection IDs, and closes them all when the connection ends.
type clientConn struct {
	conn *quic.Conn

	moving sync.Mutex // serialises Migrate
	path   *quic.Path // the path the last Migrate switched to (under moving); nil: the first socket's

	mu      sync.Mutex        // guards the fields below; never held across a network wait
	sockets []*quic.Transport // every socket the connection was given, first first
	active  int               // of sockets, the one the connection sends from
	closed  bool              // the connection ended and the sockets are closed
}

// listenUDP opens a client socket as quic-go's DialAddr does: any address,
// a free port.
func listenUDP() (*net.UDPConn, error) {
	return net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4zero})
}

// connCatcher is webtransport.Transport's DialAddr for Dial: it keeps the
// last QUIC connection it made (Dial's redials make one each).
type connCatcher struct {
	k          *clientConn
	handshaked func() // ClientConfig.Handshaked
}

func (c *connCatcher) dial(ctx context.Context, addr string, tlsConf *tls.Config, conf *quic.Config) (*quic.Conn, error) {
	k, err := dialOwn(ctx, addr, tlsConf, conf)
	if err != nil {
		return nil, err
	}
	c.k = k
	if f := c.handshaked; f != nil {
		go func() {
			select {
			case <-k.conn.HandshakeComplete():
				f()
			case <-k.conn.Context().Done():
			}
		}()
	}
	return k.conn, nil
}

// dialOwn dials a QUIC connection to addr from a socket of its own; the
// socket closes when the connection ends.
func dialOwn(ctx context.Context, addr string, tlsConf *tls.Config, conf *quic.Config) (*clientConn, error) {
	to, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	udp, err := listenUDP()
	if err != nil {
		return nil, err
	}
	tr := &quic.Transport{Conn: udp}
	tlsConf = tlsConf.Clone()
	if tlsConf.ServerName == "" {
		// What quic-go's DialAddr takes from addr: Transport.Dial would
		// take the IP address instead of a name.
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		tlsConf.ServerName = host
	}
	c, err := tr.DialEarly(ctx, to, tlsConf, conf)
	if err != nil {
		closeSocket(tr)
		return nil, err
	}
	k := &clientConn{conn: c, sockets: []*quic.Transport{tr}}
	context.AfterFunc(c.Context(), k.closeSockets)
	return k, nil
}

// closeSocket closes tr and its socket (a Transport closes only a socket it
// opened itself).
func closeSocket(tr *quic.Transport) {
	_ = tr.Close()
	_ = tr.Conn.Close()
}

// closeSockets closes every socket of the connection, once it has ended
// (its CONNECTION_CLOSE is sent by then): the session's close calls it,
// and so does the connection's end, whichever comes first. A Transport's
// Close ends every connection on it, so no socket is closed earlier, even
// one a migration left.
func (k *clientConn) closeSockets() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	k.closed = true
	for _, tr := range k.sockets {
		closeSocket(tr)
	}
}

// Migrate moves the session's QUIC connection to a fresh local UDP socket
// (spec §2.1): it opens the socket, probes the path from it to the server
// (PATH_CHALLENGE, RFC 9000 §8.2), and once the server answered, switches
// the connection to it. Streams, datagrams and calls in flight carry on;
// the server sees the client's packets from a new address and port. ctx
// bounds the probe; on an error the connection stays on its path. Calls
// are serialised.
//
// A client calls it when its network changed (a new interface, a laptop
// waking). A NAT rebinding needs no call: the server follows a client
// whose address changed on its own (RFC 9000 §9.3).
//
// The socket left keeps its port until the session ends: quic-go cannot
// release a socket a connection was on without ending the connection, so
// each Migrate holds one more idle socket. And quic-go v0.64 lets a
// connection migrate twice: the third move finds none of the server's
// connection IDs left (quic-go#5814), its probe never leaves, and Migrate
// fails when ctx ends. Migrate fails with ErrNoMigration
// on a session that has no sockets of its own, and with the server's
// refusal when the server disabled active migration (its
// disable_active_migration transport parameter).
func (s *Session) Migrate(ctx context.Context) error {
	k := s.conn.Load()
	if k == nil {
		return ErrNoMigration
	}
	select {
	case <-s.done:
		return s.Err() // set before done is closed
	default:
	}
	k.moving.Lock()
	defer k.moving.Unlock()
	udp, err := listenUDP()
	if err != nil {
		return fmt.Errorf("flow: migrate: %w", err)
	}
	tr := &quic.Transport{Conn: udp}
	p, err := k.conn.AddPath(tr)
	if err != nil {
		closeSocket(tr) // no path on it yet: the connection is not on it
		return fmt.Errorf("flow: migrate: %w", err)
	}
	// From the first probe on, the connection is on tr too: it is closed
	// with the connection, not before.
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		closeSocket(tr)
		return fmt.Errorf("flow: migrate: the session's connection has ended: %w", context.Cause(k.conn.Context()))
	}
	k.sockets = append(k.sockets, tr)
	moved := len(k.sockets) - 1
	from := k.sockets[k.active].Conn.LocalAddr()
	k.mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.ctx, func() { cancel(ErrClosed) })
	defer stop()
	if err := p.Probe(ctx); err != nil {
		_ = p.Close()
		return fmt.Errorf("flow: migrate: probing the path from %v: %w", udp.LocalAddr(), err)
	}
	// quic-go v0.64's switch replaces the connection's socket without the
	// lock its ConnectionState reads it under (http3 read it when the
	// server's SETTINGS came): taking that lock here, before Switch, orders
	// those reads before the switch's write, which the race detector
	// otherwise reports as a race.
	_ = k.conn.ConnectionState()
	if err := p.Switch(); err != nil {
		_ = p.Close()
		return fmt.Errorf("flow: migrate: switching to %v: %w", udp.LocalAddr(), err)
	}
	if k.path != nil {
		_ = k.path.Close() // the path left: its connection ID retired
	}
	k.path = p
	k.mu.Lock()
	k.active = moved
	k.mu.Unlock()
	s.log.Debug("moved to a new local socket", "from", from, "to", udp.LocalAddr())
	return nil
}

// LocalAddr returns the local address of the QUIC connection Dial made
// (after a Migrate, the new socket's), or nil for a session without one.
func (s *Session) LocalAddr() net.Addr {
	k := s.conn.Load()
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sockets[k.active].Conn.LocalAddr()
}

// A Mover moves every open client session dialled with it
// (ClientConfig.Mover) to a new local socket at once (Session.Migrate,
// spec §2.1): a program calls Move when its network changed, and every
// session it holds (a bridge's, for each of its clients) follows. The zero
// Mover is ready to use; it is safe for concurrent use.
type Mover struct {
	mu       sync.Mutex
	sessions map[*Session]struct{}
}

// add keeps s until it ends.
func (m *Mover) add(s *Session) {
	m.mu.Lock()
	if m.sessions == nil {
		m.sessions = map[*Session]struct{}{}
	}
	m.sessions[s] = struct{}{}
	m.mu.Unlock()
	context.AfterFunc(s.ctx, func() {
		m.mu.Lock()
		delete(m.sessions, s)
		m.mu.Unlock()
	})
}

// Move migrates every open session of m at once and returns how many
// moved, with the errors of those that did not (joined). ctx bounds each
// migration.
func (m *Mover) Move(ctx context.Context) (moved int, err error) {
	m.mu.Lock()
	ss := make([]*Session, 0, len(m.sessions))
	for s := range m.sessions {
		select {
		case <-s.done: // ended; its removal may still be on its way
		default:
			ss = append(ss, s)
		}
	}
	m.mu.Unlock()
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() { errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for _, e := range errs {
		if e == nil {
			moved++
		}
	}
	return moved, errors.Join(errs...)
}
