package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGenerateDev(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c, err := GenerateDev(DevOptions{Now: now, Hosts: []string{"example.test", "10.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := c.Leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Fatalf("key is %T, want ECDSA P-256", c.Leaf.PublicKey)
	}
	if d := c.Leaf.NotAfter.Sub(c.Leaf.NotBefore); d >= 14*24*time.Hour || d != DefaultDevValidity {
		t.Fatalf("validity %v, want %v (< 14 days)", d, DefaultDevValidity)
	}
	if !c.Leaf.NotBefore.Before(now) || !c.Leaf.NotAfter.After(now) {
		t.Fatal("not valid now")
	}
	for _, h := range []string{"127.0.0.1", "::1", "localhost", "example.test", "10.0.0.1"} {
		if err := c.Leaf.VerifyHostname(h); err != nil {
			t.Errorf("SAN %s: %v", h, err)
		}
	}
	if c.Leaf.IsCA || c.Leaf.ExtKeyUsage[0] != 1 /* ServerAuth */ {
		t.Fatal("want a server-auth leaf, not a CA")
	}
	if got, want := c.Hash(), sha256.Sum256(c.TLS.Certificate[0]); got != want {
		t.Fatal("Hash is not the SHA-256 of the DER")
	}
	if _, err := GenerateDev(DevOptions{Validity: 14 * 24 * time.Hour}); err == nil {
		t.Fatal("a 14-day certificate was made; browsers refuse it")
	}
}

func TestLoadOrCreateDev(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	now := time.Now()
	c1, created, err := LoadOrCreateDev(dir, now)
	if err != nil || !created {
		t.Fatalf("first call: created %v, %v", created, err)
	}
	st, err := os.Stat(filepath.Join(dir, DevKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", st.Mode(), err)
	}
	c2, created, err := LoadOrCreateDev(dir, now.Add(time.Hour))
	if err != nil || created || c2.Hash() != c1.Hash() {
		t.Fatalf("second call: created %v, same %v, %v", created, c2.Hash() == c1.Hash(), err)
	}
	// Expiring within a day: renewed.
	c3, created, err := LoadOrCreateDev(dir, c1.Leaf.NotAfter.Add(-time.Hour))
	if err != nil || !created || c3.Hash() == c1.Hash() {
		t.Fatalf("near expiry: created %v, %v", created, err)
	}
	// A corrupted file: renewed.
	if err := os.WriteFile(filepath.Join(dir, DevCertFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	c4, created, err := LoadOrCreateDev(dir, now)
	if err != nil || !created || c4.Hash() == c3.Hash() {
		t.Fatalf("corrupted: created %v, %v", created, err)
	}
	if err := CheckDev(c4, now); err != nil {
		t.Fatal(err)
	}
}

func TestParseHash(t *testing.T) {
	c, err := GenerateDev(DevOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := c.Hash()
	colon := strings.ToUpper(hex.EncodeToString(want[:1]))
	for _, b := range want[1:] {
		colon += ":" + strings.ToUpper(hex.EncodeToString([]byte{b}))
	}
	for _, s := range []string{c.HashHex(), c.HashBase64(), colon, base64.RawURLEncoding.EncodeToString(want[:])} {
		got, err := ParseHash(s)
		if err != nil || got != want {
			t.Errorf("ParseHash(%q) = %x, %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "abcd", "zz", hex.EncodeToString(make([]byte, 31))} {
		if _, err := ParseHash(bad); err == nil {
			t.Errorf("ParseHash(%q) accepted", bad)
		}
	}
}

// handshake runs a real TLS handshake over loopback TCP.
func handshake(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tc := tls.Server(c, server)
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		_ = tc.Handshake()
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := tls.Client(c, client)
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	return tc.Handshake()
}

func TestClientTLSConfig(t *testing.T) {
	c, err := GenerateDev(DevOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := GenerateDev(DevOptions{})
	srv := ServerTLSConfig(c)
	pinned, _ := ClientTLSConfig(ClientOptions{PinnedHashes: [][32]byte{other.Hash(), c.Hash()}, ServerName: "localhost"})
	if err := handshake(t, srv, pinned); err != nil {
		t.Fatalf("pinned hash refused: %v", err)
	}
	wrong, _ := ClientTLSConfig(ClientOptions{PinnedHashes: [][32]byte{other.Hash()}, ServerName: "localhost"})
	if err := handshake(t, srv, wrong); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("wrong pin: %v, want ErrHashMismatch", err)
	}
	verified, _ := ClientTLSConfig(ClientOptions{ServerName: "localhost"})
	if err := handshake(t, srv, verified); err == nil {
		t.Fatal("a self-signed certificate passed system verification")
	}
	insecure, _ := ClientTLSConfig(ClientOptions{Insecure: true})
	if err := handshake(t, srv, insecure); err != nil {
		t.Fatalf("insecure: %v", err)
	}
	tls12 := &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12}
	if err := handshake(t, srv, tls12); err == nil {
		t.Fatal("a TLS 1.2 client was accepted")
	}
}
