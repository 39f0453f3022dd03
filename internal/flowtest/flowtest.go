// Package flowtest starts MCP-Flow servers on loopback for the tests, the
// benchmarks and the conformance runner's own tests.
package flowtest

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/tools"
)

// Cert is one development certificate for the whole test binary.
var Cert = func() *certs.Cert {
	c, err := certs.GenerateDev(certs.DevOptions{})
	if err != nil {
		panic(err)
	}
	return c
}()

// Logger logs warnings to stderr, or everything with MCP_FLOW_TEST_DEBUG set.
func Logger() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("MCP_FLOW_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// Quiet discards logs.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// ToolsMux returns a mux with mcp-flow-server's test tools, and their
// capabilities for the initialize result.
func ToolsMux(t testing.TB, cfg demotools.Config) (flow.Mux, []byte) {
	t.Helper()
	reg, err := tools.New(demotools.New(cfg)...)
	if err != nil {
		t.Fatal(err)
	}
	mux := flow.Mux{}
	demotools.Register(mux, reg)
	return mux, demotools.Capabilities()
}

// Serve starts a server with cfg on 127.0.0.1 and closes it with the test.
// Empty fields get: a free port, Cert, the test tools, Logger().
func Serve(t testing.TB, cfg flow.ServerConfig) *flow.Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	srv, err := flow.NewServer(serverDefaults(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	return srv
}

// serverDefaults fills cfg's empty TLSConfig (Cert), Handler (the test
// tools) and Logger (Logger()).
func serverDefaults(t testing.TB, cfg flow.ServerConfig) flow.ServerConfig {
	if cfg.TLSConfig == nil {
		cfg.TLSConfig = certs.ServerTLSConfig(Cert)
	}
	if cfg.Handler == nil {
		mux, caps := ToolsMux(t, demotools.Config{Root: t.TempDir()})
		cfg.Handler, cfg.Capabilities = mux, caps
	}
	if cfg.Logger == nil {
		cfg.Logger = Logger()
	}
	return cfg
}

// ClientTLS pins Cert.
func ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	c, err := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{Cert.Hash()}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// SyncBuffer is a bytes.Buffer that a subprocess writes (as its Stdout or
// Stderr) while a test reads it.
type SyncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed by the next Write; nil until Wait asks
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// Wait waits until what has been written satisfies done, for at most
// timeout, and returns the text and whether it did. A subprocess's stderr
// reaches the buffer through exec's copying goroutine: a line the process
// wrote before its stdout announcement may not be here yet when the test
// has read that announcement.
func (s *SyncBuffer) Wait(timeout time.Duration, done func(string) bool) (string, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		text := s.b.String()
		if done(text) {
			s.mu.Unlock()
			return text, true
		}
		if s.written == nil {
			s.written = make(chan struct{})
		}
		written := s.written
		s.mu.Unlock()
		select {
		case <-written:
		case <-deadline.C:
			return text, false
		}
	}
}

// String returns what has been written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Announcement reads mcp-flow-server's stdout up to its URL and
// certificate hash ("url: …", "cert-sha256: …"); empty if it ends first.
func Announcement(stdout io.Reader) (url, hash string) {
	sc := bufio.NewScanner(stdout)
	for (url == "" || hash == "") && sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		switch k {
		case "url":
			url = v
		case "cert-sha256":
			hash = v
		}
	}
	return url, hash
}

// PinnedTLS returns a client TLS config that pins the certificate hash
// hash (hex), as mcp-flow-server prints it.
func PinnedTLS(t testing.TB, hash string) *tls.Config {
	t.Helper()
	pin, err := certs.ParseHash(hash)
	if err != nil {
		t.Fatal(err)
	}
	c, err := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{pin}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// CertFiles writes Cert and its key as PEM files (cert.pem, key.pem) into
// dir, for a server of another program (Deno's, in js/ and bench/).
func CertFiles(dir string) (certFile, keyFile string, err error) {
	certPEM, keyPEM, err := Cert.PEM()
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}
