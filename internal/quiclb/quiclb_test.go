package quiclb

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDraftVector: the draft's unencrypted test vector ("Load Balancer
// Test Vectors", "Unencrypted CIDs": config rotation 0, server ID c4605e,
// nonce 4504cc4f, the length self-encoded) comes out byte for byte, and
// ServerID reads it back. The draft's second vector is not reproducible as
// printed (its nonce has 9 hexadecimal digits, and its first octet 0x20
// says length 0); the same configuration with a 5-octet nonce is checked
// from the format instead: 0x2a = rotation 1 (0b001 << 5) | 10 octets.
func TestDraftVector(t *testing.T) {
	for _, c := range []struct {
		cr             uint8
		sid, nonce, id string
	}{
		{0, "c4605e", "4504cc4f", "07c4605e4504cc4f"},
		{1, "350d28b420", "3487d970b0", "2a350d28b4203487d970b0"},
		{6, "01", "00000000", "c50100000000"},
	} {
		sid, nonce := unhex(t, c.sid), unhex(t, c.nonce)
		g, err := NewGenerator(Config{ConfigRotation: c.cr, ServerID: sid, NonceLen: len(nonce)})
		if err != nil {
			t.Fatal(err)
		}
		got := g.append(nil, nonce)
		if hex.EncodeToString(got) != c.id || g.ConnectionIDLen() != len(got) {
			t.Errorf("rotation %d, server ID %s, nonce %s: %x (length %d), want %s", c.cr, c.sid, c.nonce, got, g.ConnectionIDLen(), c.id)
		}
		if back, cr, ok := ServerID(got, len(sid)); !ok || cr != c.cr || !bytes.Equal(back, sid) {
			t.Errorf("ServerID(%x): %x, rotation %d, %v; want %s, %d", got, back, cr, ok, c.sid, c.cr)
		}
	}
}

// TestGenerate: generated connection IDs have the configured length, first
// octet and server ID, and nonces that differ.
func TestGenerate(t *testing.T) {
	g, err := NewGenerator(Config{ConfigRotation: 2, ServerID: []byte{0xab, 0xcd}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 1000 {
		id, err := g.GenerateConnectionID()
		if err != nil {
			t.Fatal(err)
		}
		b := id.Bytes()
		if len(b) != 11 || g.ConnectionIDLen() != 11 || b[0] != 2<<5|10 || b[1] != 0xab || b[2] != 0xcd {
			t.Fatalf("%x: want 11 octets starting 4aabcd", b)
		}
		if seen[string(b[3:])] {
			t.Fatalf("nonce %x twice in 1000", b[3:])
		}
		seen[string(b[3:])] = true
	}
}

// TestLimits: every limit of the draft's format, crossed.
func TestLimits(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{ServerID: []byte{1}}, true},
		{Config{ConfigRotation: 6, ServerID: []byte{1}}, true},
		{Config{ConfigRotation: 7, ServerID: []byte{1}}, false},
		{Config{}, false},
		{Config{ServerID: []byte{1}, NonceLen: 4}, true},
		{Config{ServerID: []byte{1}, NonceLen: 3}, false},
		{Config{ServerID: make([]byte, 11)}, true},  // 1 + 11 + 8 = 20
		{Config{ServerID: make([]byte, 12)}, false}, // 21
		{Config{ServerID: make([]byte, 15), NonceLen: 4}, true},
		{Config{ServerID: make([]byte, 16), NonceLen: 4}, false},
	} {
		if _, err := NewGenerator(c.cfg); (err == nil) != c.ok {
			t.Errorf("%+v: %v, want ok=%v", c.cfg, err, c.ok)
		}
	}
	for _, c := range []struct {
		cid    string
		sidLen int
	}{
		{"e70102030405", 1}, // 0b111: unroutable
		{"0401020304", 1},   // shorter than 1 + 1 + 4
		{"0701020304050607", 0},
	} {
		if sid, _, ok := ServerID(unhex(t, c.cid), c.sidLen); ok {
			t.Errorf("ServerID(%s, %d): %x, want not ok", c.cid, c.sidLen, sid)
		}
	}
}
