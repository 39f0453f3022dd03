package flow

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/quic-go/quic-go"
)

// FleetKey is the secret every server of a fleet shares (docs/deploy.md,
// "Fleet"): behind one name and one balancer, each derives from it the
// same QUIC stateless-reset key (RFC 9000 §10.3), so that a server that
// gets a packet of a connection it does not hold (its predecessor on the
// address was killed, or the balancer sent it elsewhere) answers with a
// stateless reset the client accepts, and the client learns at once that
// its connection is gone instead of after its idle timeout; and the same
// token key (RFC 9000 §8.1.3), so that an address-validation token one
// server gave is accepted by the others.
//
// A FleetKey never prints: fmt's verbs, slog and %#v show only its ID, a
// fingerprint that says whether two servers share a key and nothing of it.
type FleetKey struct{ secret [32]byte }

// fleetKeyHexLen is the length of a FleetKey's text: 32 bytes in hex.
const fleetKeyHexLen = 64

// NewFleetKey returns a new random key.
func NewFleetKey() (*FleetKey, error) {
	k := &FleetKey{}
	if _, err := rand.Read(k.secret[:]); err != nil {
		return nil, err
	}
	return k, nil
}

// ParseFleetKey reads a key's text (MarshalText's: 64 hexadecimal digits;
// surrounding white space is ignored). Its error never quotes the text.
func ParseFleetKey(text []byte) (*FleetKey, error) {
	s := strings.TrimSpace(string(text))
	k := &FleetKey{}
	if len(s) != fleetKeyHexLen {
		return nil, fmt.Errorf("flow: a fleet key is %d hexadecimal digits, not %d characters", fleetKeyHexLen, len(s))
	}
	if _, err := hex.Decode(k.secret[:], []byte(s)); err != nil {
		return nil, errors.New("flow: a fleet key is hexadecimal digits only")
	}
	return k, nil
}

// MarshalText is the key's text, for a key file: 64 hexadecimal digits.
func (k FleetKey) MarshalText() ([]byte, error) {
	return []byte(hex.EncodeToString(k.secret[:])), nil
}

// derive is the 32-byte key for one use, by HKDF-SHA256 with info naming
// the use: no two uses share bytes, and none reveals the secret.
func (k FleetKey) derive(use string) [32]byte {
	b, err := hkdf.Key(sha256.New, k.secret[:], nil, "mcp-flow fleet key: "+use, 32)
	if err != nil {
		panic("flow: HKDF: " + err.Error()) // only for a length out of range
	}
	return [32]byte(b)
}

// statelessResetKey is quic.Transport.StatelessResetKey.
func (k FleetKey) statelessResetKey() *quic.StatelessResetKey {
	r := quic.StatelessResetKey(k.derive("QUIC stateless reset"))
	return &r
}

// tokenGeneratorKey is quic.Transport.TokenGeneratorKey.
func (k FleetKey) tokenGeneratorKey() *quic.TokenGeneratorKey {
	t := quic.TokenGeneratorKey(k.derive("QUIC address validation token"))
	return &t
}

// ID is a fingerprint of the key (8 hexadecimal digits, derived as the
// keys are): servers that log the same ID share the key.
func (k FleetKey) ID() string {
	id := k.derive("fingerprint")
	return hex.EncodeToString(id[:4])
}

// String shows the ID only.
func (k FleetKey) String() string { return "FleetKey(" + k.ID() + ")" }

// GoString shows the ID only.
func (k FleetKey) GoString() string { return k.String() }

// Format shows the ID only, whatever the verb.
func (k FleetKey) Format(f fmt.State, _ rune) { fmt.Fprint(f, k.String()) }

// LogValue shows the ID only.
func (k FleetKey) LogValue() slog.Value { return slog.StringValue(k.String()) }
