package lossrelay

import (
	"errors"
	"net"
)

// Origin is one address that carries both transports of an origin, as
// mcp-flow-server's -addr does (spec §10.1): UDP through a Relay (so its Path
// decides whether QUIC gets through: Loss 1 blocks it, Delay makes a slow
// network) and TCP through a TCPRelay that only forwards. A client given
// https://Addr()/… sees the network the UDP Path describes and a TCP path
// that works: the network a fallback client must cope with.
//
// To keep a server's Host-header check content (a loopback listener wants
// its own port in Host: spec §9), put the Origin on another loopback
// address with the server's port: 127.0.0.2:PORT in front of 127.0.0.1:PORT.
type Origin struct {
	UDP *Relay
	TCP *TCPRelay
}

// NewOrigin starts an Origin at addr (host:port) whose UDP goes to udpTarget
// through up and down, and whose TCP goes to tcpTarget unchanged.
func NewOrigin(addr string, udpTarget *net.UDPAddr, tcpTarget string, up, down Path) (*Origin, error) {
	at, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	u, err := New(Config{Target: udpTarget, Up: up, Down: down, Listen: at})
	if err != nil {
		return nil, err
	}
	t, err := NewTCPAt(u.Addr().String(), tcpTarget, Path{}, Path{})
	if err != nil {
		u.Close()
		return nil, err
	}
	return &Origin{UDP: u, TCP: t}, nil
}

// Addr is the host:port clients use for both transports.
func (o *Origin) Addr() string { return o.UDP.Addr().String() }

// Blocked is the Path of a network that drops every UDP datagram.
var Blocked = Path{Loss: 1}

// Close stops both relays.
func (o *Origin) Close() error {
	return errors.Join(o.UDP.Close(), o.TCP.Close())
}
