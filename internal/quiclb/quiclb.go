// Package quiclb makes connection IDs that name their server, in the
// unencrypted form of QUIC-LB (draft-ietf-quic-load-balancers, "CID
// format" and "First CID octet"), so that a load balancer can route every
// packet of a QUIC connection to the server that holds it by reading its
// Destination Connection ID, whatever the client's address: a NAT
// rebinding or a migration does not move the connection to another server
// (docs/deploy.md, "Connection IDs that name their server").
//
// A connection ID is
//
//	First Octet (8): Config Rotation (3) | length of the rest (5),
//	Server ID (8 × len(ServerID)),
//	Nonce (8 × NonceLen): random bytes.
//
// The draft's keyed forms (AES-128-ECB over the server ID and nonce) are
// not implemented: see docs/deploy.md for why the plaintext form.
package quiclb

import (
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/quic-go/quic-go"
)

// Limits of the draft's CID format: QUIC v1's connection IDs hold 20
// octets, the first octet included; the server ID has at least one octet,
// the nonce at least four.
const (
	MaxCIDLen      = 20
	MinServerIDLen = 1
	MinNonceLen    = 4
	// MaxConfigRotation is the highest config rotation codepoint a
	// configuration may use: 0b111 marks an unroutable CID.
	MaxConfigRotation = 6
	// DefaultNonceLen is the nonce length of a Config that sets none: a
	// server that draws random 8-octet nonces repeats one after about 2^32
	// connection IDs (the draft's "Connection ID Entropy").
	DefaultNonceLen = 8
)

// Config is one QUIC-LB configuration of one server: the values every
// server of the pool shares (ConfigRotation, the length of ServerID,
// NonceLen), and its own ServerID.
type Config struct {
	ConfigRotation uint8
	ServerID       []byte
	NonceLen       int // 0: DefaultNonceLen
}

// Generator is a quic.ConnectionIDGenerator (quic.Transport's) that makes
// connection IDs of one Config. It is immutable and safe for concurrent
// use.
type Generator struct {
	first byte
	sid   []byte
	nonce int
}

var _ quic.ConnectionIDGenerator = (*Generator)(nil)

// NewGenerator checks c against the draft's limits and returns its
// generator.
func NewGenerator(c Config) (*Generator, error) {
	n := c.NonceLen
	if n == 0 {
		n = DefaultNonceLen
	}
	switch {
	case c.ConfigRotation > MaxConfigRotation:
		return nil, fmt.Errorf("quiclb: config rotation %d: want 0 to %d (%d marks unroutable CIDs)", c.ConfigRotation, MaxConfigRotation, MaxConfigRotation+1)
	case len(c.ServerID) < MinServerIDLen:
		return nil, errors.New("quiclb: a server ID has at least one octet")
	case n < MinNonceLen:
		return nil, fmt.Errorf("quiclb: nonce of %d octets: at least %d", n, MinNonceLen)
	case 1+len(c.ServerID)+n > MaxCIDLen:
		return nil, fmt.Errorf("quiclb: a server ID of %d octets and a nonce of %d make a connection ID of %d octets: at most %d", len(c.ServerID), n, 1+len(c.ServerID)+n, MaxCIDLen)
	}
	rest := len(c.ServerID) + n
	return &Generator{first: c.ConfigRotation<<5 | byte(rest), sid: append([]byte(nil), c.ServerID...), nonce: n}, nil
}

// ConnectionIDLen is the length of every connection ID of g.
func (g *Generator) ConnectionIDLen() int { return 1 + len(g.sid) + g.nonce }

// GenerateConnectionID returns a new connection ID: the first octet, the
// server ID, and a random nonce.
func (g *Generator) GenerateConnectionID() (quic.ConnectionID, error) {
	var nonce [MaxCIDLen]byte
	if _, err := rand.Read(nonce[:g.nonce]); err != nil {
		return quic.ConnectionID{}, err
	}
	return quic.ConnectionIDFromBytes(g.append(nil, nonce[:g.nonce])), nil
}

// append appends the connection ID of nonce to b.
func (g *Generator) append(b, nonce []byte) []byte {
	b = append(b, g.first)
	b = append(b, g.sid...)
	return append(b, nonce...)
}

// ServerID is the server ID of a connection ID of a configuration whose
// server IDs have sidLen octets, and its config rotation; ok is false for
// a connection ID too short to hold one, or marked unroutable (0b111).
func ServerID(cid []byte, sidLen int) (sid []byte, rotation uint8, ok bool) {
	if len(cid) < 1+sidLen+MinNonceLen || sidLen < MinServerIDLen {
		return nil, 0, false
	}
	rotation = cid[0] >> 5
	if rotation > MaxConfigRotation {
		return nil, rotation, false
	}
	return cid[1 : 1+sidLen], rotation, true
}
