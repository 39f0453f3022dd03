// Package certs makes and loads the TLS certificates of MCP-Flow servers and
// the TLS configurations of clients.
//
// Development certificates follow what browsers accept through
// WebTransport's serverCertificateHashes: an ECDSA P-256 key and a validity
// of less than 14 days (Chromium refuses 14 days or more). Clients pin such a
// certificate by the SHA-256 of its DER encoding.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// MaxDevValidity is the longest validity a development certificate may have:
// just under Chromium's 14-day limit for serverCertificateHashes.
const MaxDevValidity = 14*24*time.Hour - time.Minute

// DefaultDevValidity is the validity of a generated development certificate.
const DefaultDevValidity = 13 * 24 * time.Hour

// renewBefore is how long before expiry a stored certificate is replaced.
const renewBefore = 24 * time.Hour

// Cert is a certificate with its key.
type Cert struct {
	TLS  tls.Certificate
	Leaf *x509.Certificate
}

// Hash returns the SHA-256 of the leaf certificate's DER encoding: the value
// of serverCertificateHashes and of the CLI's -cert-hash.
func (c *Cert) Hash() [32]byte { return sha256.Sum256(c.Leaf.Raw) }

// HashHex returns Hash in lowercase hex.
func (c *Cert) HashHex() string { h := c.Hash(); return hex.EncodeToString(h[:]) }

// HashBase64 returns Hash in standard base64.
func (c *Cert) HashBase64() string { h := c.Hash(); return base64.StdEncoding.EncodeToString(h[:]) }

// PEM returns the certificate (its leaf) and its private key (PKCS #8) as
// PEM, as LoadOrCreateDev writes them and Load reads them.
func (c *Cert) PEM() (certPEM, keyPEM []byte, err error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.TLS.PrivateKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Leaf.Raw}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// ParseHash parses a SHA-256 hash given as hex (with or without colons) or
// base64 (standard or URL alphabet, padded or not).
func ParseHash(s string) ([32]byte, error) {
	var h [32]byte
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(strings.ReplaceAll(s, ":", "")); err == nil {
		if len(b) != 32 {
			return h, fmt.Errorf("certs: hash is %d bytes, want 32 (a SHA-256)", len(b))
		}
		copy(h[:], b)
		return h, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != 32 {
				return h, fmt.Errorf("certs: hash is %d bytes, want 32 (a SHA-256)", len(b))
			}
			copy(h[:], b)
			return h, nil
		}
	}
	return h, errors.New("certs: hash is neither hex nor base64")
}

// DevOptions configures GenerateDev.
type DevOptions struct {
	// Now is the time the certificate is made at (default time.Now()).
	Now time.Time
	// Validity defaults to DefaultDevValidity and may not exceed
	// MaxDevValidity.
	Validity time.Duration
	// Hosts are extra DNS names or IP addresses, besides 127.0.0.1, ::1 and
	// localhost.
	Hosts []string
}

// GenerateDev makes a self-signed development certificate: ECDSA P-256,
// valid from an hour before Now for Validity in all (so under 14 days), SANs
// 127.0.0.1, ::1, localhost and opts.Hosts, for server authentication.
func GenerateDev(opts DevOptions) (*Cert, error) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	validity := opts.Validity
	if validity == 0 {
		validity = DefaultDevValidity
	}
	if validity > MaxDevValidity {
		return nil, fmt.Errorf("certs: validity %v exceeds %v: browsers refuse such a certificate hash", validity, MaxDevValidity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "mcp-flow development certificate"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(-time.Hour + validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, h := range opts.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Cert{TLS: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, Leaf: leaf}, nil
}

// CheckDev reports why c is not a usable development certificate at now, or
// nil: it must be ECDSA P-256, valid now for more than a day, and valid for
// less than 14 days in all.
func CheckDev(c *Cert, now time.Time) error {
	pub, ok := c.Leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return errors.New("not an ECDSA P-256 certificate")
	}
	if d := c.Leaf.NotAfter.Sub(c.Leaf.NotBefore); d > MaxDevValidity {
		return fmt.Errorf("valid for %v, browsers accept less than 14 days", d)
	}
	if now.Before(c.Leaf.NotBefore) {
		return errors.New("not yet valid")
	}
	if now.Add(renewBefore).After(c.Leaf.NotAfter) {
		return fmt.Errorf("expires %s", c.Leaf.NotAfter.Format(time.RFC3339))
	}
	return nil
}

// Dev file names inside the directory of LoadOrCreateDev.
const (
	DevCertFile = "dev-cert.pem"
	DevKeyFile  = "dev-key.pem"
)

// DefaultDir returns where development certificates are kept:
// $MCP_FLOW_CERT_DIR, else mcp-flow/certs in the user cache directory.
func DefaultDir() string {
	if d := os.Getenv("MCP_FLOW_CERT_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "mcp-flow", "certs")
	}
	return filepath.Join(os.TempDir(), "mcp-flow-certs")
}

// LoadOrCreateDev loads the development certificate kept in dir, or makes and
// stores a new one when there is none, or when it is unreadable, expires
// within a day, or breaks the rules of CheckDev. created says which. Files
// are written to a temporary name and renamed, so that concurrent processes
// never see half a file; the key is mode 0600 and dir 0700.
func LoadOrCreateDev(dir string, now time.Time) (c *Cert, created bool, err error) {
	certPath, keyPath := filepath.Join(dir, DevCertFile), filepath.Join(dir, DevKeyFile)
	if c, err := Load(certPath, keyPath); err == nil && CheckDev(c, now) == nil {
		return c, false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, err
	}
	c, err = GenerateDev(DevOptions{Now: now})
	if err != nil {
		return nil, false, err
	}
	certPEM, keyPEM, err := c.PEM()
	if err != nil {
		return nil, false, err
	}
	// Key first: a reader that finds the new certificate finds its key.
	if err := writeAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, false, err
	}
	if err := writeAtomic(certPath, certPEM, 0o644); err != nil {
		return nil, false, err
	}
	return c, true, nil
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Load loads a certificate and key from PEM files.
func Load(certFile, keyFile string) (*Cert, error) {
	tc, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	leaf := tc.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(tc.Certificate[0]); err != nil {
			return nil, fmt.Errorf("certs: %w", err)
		}
	}
	return &Cert{TLS: tc, Leaf: leaf}, nil
}

// LoadCAFile loads a pool of CA certificates from a PEM file.
func LoadCAFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("certs: no certificate in %s", path)
	}
	return pool, nil
}

// ServerTLSConfig returns a TLS 1.3-only server configuration serving c.
// http3 adds its ALPN ("h3") itself.
func ServerTLSConfig(c *Cert) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c.TLS}, MinVersion: tls.VersionTLS13}
}

// ClientOptions configures ClientTLSConfig.
type ClientOptions struct {
	// PinnedHashes, when set, are the only certificates accepted: the server's
	// leaf must have one of these SHA-256 hashes (as serverCertificateHashes).
	PinnedHashes [][32]byte
	// RootCAs verifies the server the usual way (default: the system pool).
	RootCAs *x509.CertPool
	// Insecure accepts any certificate. Development only.
	Insecure bool
	// ServerName overrides the name verified.
	ServerName string
}

// ErrHashMismatch is the handshake error when the server's certificate is not
// one of the pinned hashes.
var ErrHashMismatch = errors.New("certs: server certificate does not match the pinned SHA-256")

// ClientTLSConfig returns a TLS 1.3-only client configuration.
func ClientTLSConfig(o ClientOptions) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: o.RootCAs, ServerName: o.ServerName}
	switch {
	case len(o.PinnedHashes) > 0:
		pins := append([][32]byte(nil), o.PinnedHashes...)
		cfg.InsecureSkipVerify = true // replaced by the pin check below
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return ErrHashMismatch
			}
			got := sha256.Sum256(cs.PeerCertificates[0].Raw)
			for _, p := range pins {
				if p == got {
					return nil
				}
			}
			return fmt.Errorf("%w (got %s)", ErrHashMismatch, hex.EncodeToString(got[:]))
		}
	case o.Insecure:
		cfg.InsecureSkipVerify = true
	}
	return cfg, nil
}
