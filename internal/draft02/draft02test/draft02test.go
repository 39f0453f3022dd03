// Package draft02test starts interop/draft02peer, a WebTransport draft-02
// MCP-Flow server on webtransport-go v0.6.0 and quic-go v0.41.0, for tests.
// The peer is a module of its own: it is built with the go command from its
// directory (its dependencies come from the module proxy once, then from the
// module cache).
package draft02test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/internal/gobuild"
)

// peerDir is interop/draft02peer of the main module.
func peerDir() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "interop", "draft02peer"), nil
}

// Peer is a running draft02peer.
type Peer struct {
	URL string
	// CertHash is the hex SHA-256 of the peer's certificate; TLS pins it.
	CertHash string
	TLS      *tls.Config
}

// Build builds the peer into t's temporary directory and returns the
// binary's path. Run with the arguments "call scenario" the binary is a
// draft-02 client for the conformance runner's client mode.
//
// The build takes its turn among the go commands that share the build
// cache (gobuild.Run): the first compiles the peer's own quic-go and
// webtransport-go (33 CPU-s, 18 s on the 2-core machine), the others find
// them in the cache and only link (0.5 s). Seven test files start the
// peer, three of them in the race run at once, and a second clone's suite
// beside it shares the cache: without the turns the same compile ran up to
// six times at once. Under make test the run builds it once for all its
// test binaries (gobuild.PathWith); the peer's own module is built with
// make test's GOFLAGS (-trimpath) and -mod=mod.
func Build(t testing.TB) string {
	t.Helper()
	dir, err := peerDir()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := gobuild.PathWith(t, filepath.Join(dir, "draft02peer"), func(out string) *exec.Cmd {
		build := exec.Command("go", "build", "-o", out, ".")
		build.Dir = dir
		build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
		return build
	})
	if err != nil {
		t.Fatalf("building interop/draft02peer: %v", err)
	}
	return bin
}

// Start builds the peer (see Build), starts it as a server, and stops it
// when t ends; the peer's stderr is shown in full if t fails.
func Start(t testing.TB) Peer {
	t.Helper()
	bin := Build(t)
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the peer serves until its stdin closes
		if err := cmd.Wait(); err != nil {
			t.Errorf("draft02peer: %v\n%s", err, stderr.String())
		}
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("draft02peer stderr:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 2 {
		t.Fatalf("draft02peer printed %q (%v); stderr:\n%s", line, err, stderr.String())
	}
	h, err := certs.ParseHash(f[1])
	if err != nil {
		t.Fatal(err)
	}
	conf, err := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{h}})
	if err != nil {
		t.Fatal(err)
	}
	return Peer{URL: f[0], CertHash: f[1], TLS: conf}
}
