package lossrelay

import (
	"errors"
	"fmt"
	"net"
)

// Origin is one host and port that carries both transports of an origin, as
// mcp-flow-server's -addr does (spec §10.1): UDP through a Relay (so its Path
// decides whether QUIC gets through: Loss 1 blocks it, Delay makes a slow
// network) and TCP through a TCPRelay that only forwards. A client given
// https://Addr()/… sees the network the UDP Path describes and a TCP path
// that works: the network a fallback client must cope with.
type Origin struct {
	UDP *Relay
	TCP *TCPRelay
}

// NewOrigin starts an Origin on one free 127.0.0.1 port whose UDP goes to
// udpTarget through up and down, and whose TCP goes to tcpTarget unchanged.
func NewOrigin(udpTarget *net.UDPAddr, tcpTarget string, up, down Path) (*Origin, error) {
	var errs []error
	for range 8 { // the UDP port's TCP twin may be taken: try another
		u, err := New(Config{Target: udpTarget, Up: up, Down: down})
		if err != nil {
			return nil, err
		}
		t, err := NewTCPAt(u.Addr().Port, tcpTarget, Path{}, Path{})
		if err == nil {
			return &Origin{UDP: u, TCP: t}, nil
		}
		u.Close()
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("lossrelay: no port free for both UDP and TCP: %w", errors.Join(errs...))
}

// Addr is the host:port clients use for both transports.
func (o *Origin) Addr() string { return o.UDP.Addr().String() }

// Blocked is the Path of a network that drops every UDP datagram.
var Blocked = Path{Loss: 1}

// Close stops both relays.
func (o *Origin) Close() error {
	return errors.Join(o.UDP.Close(), o.TCP.Close())
}

// Port is the origin's port.
func (o *Origin) Port() int { return o.UDP.Addr().Port }

