package main

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestUDPFDKeepsAddress (issue 40; docs/deploy.md, "Fleet"): -udp-fd 3
// serves on the UDP socket the test holds, as systemd's socket activation
// hands one: the server is reached at that socket's port (not -addr's),
// and after a SIGKILL the address stays open: a datagram sent in the gap
// waits in the socket (the test reads it from its own copy) instead of
// drawing ICMP port unreachable, and a replacement given the same socket
// serves a new session at the same URL.
func TestUDPFDKeepsAddress(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	held, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	f, err := held.File() // a copy of the descriptor, passed as fd 3
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	certDir := t.TempDir()
	urlA, hash, stderrA, a := runServerFiles(t, bin, []*os.File{f}, "-udp-fd", "3", "-cert-dir", certDir)
	u, err := url.Parse(urlA)
	if err != nil {
		t.Fatal(err)
	}
	if u.Host != held.LocalAddr().String() {
		t.Fatalf("-udp-fd 3: the server announced %s, not the held socket's %s; stderr:\n%s", urlA, held.LocalAddr(), stderrA)
	}
	// Hang guard: a session and a ping take 20-60 ms here under load.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ping := func(who string) {
		t.Helper()
		s, err := flow.Dial(ctx, urlA, flow.ClientConfig{TLSConfig: flowtest.PinnedTLS(t, hash), Logger: flowtest.Quiet})
		if err != nil {
			t.Fatalf("%s: dial %s: %v", who, urlA, err)
		}
		defer s.Close()
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("%s: ping: %v", who, err)
		}
	}
	ping("the server on the held socket")

	a.proc.Process.Kill()
	<-a.exited
	probe, err := net.DialUDP("udp", nil, held.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	const gap = "sent between two servers"
	if _, err := probe.Write([]byte(gap)); err != nil {
		t.Fatal(err)
	}
	// The datagram waits in the socket: the test's copy reads it, after
	// whatever the client's closing connection sent the killed server.
	// (On a closed port the kernel answers ICMP port unreachable instead,
	// and this read would wait for nothing.)
	held.SetReadDeadline(time.Now().Add(10 * time.Second)) // hang guard: loopback delivers in µs
	buf := make([]byte, 2048)
	for {
		n, from, err := held.ReadFrom(buf)
		if err != nil {
			t.Fatalf("after the kill, the held socket got no %q from %v: %v", gap, probe.LocalAddr(), err)
		}
		if from.String() == probe.LocalAddr().String() {
			if string(buf[:n]) != gap {
				t.Fatalf("the held socket read %q from the probe, want %q", buf[:n], gap)
			}
			break
		}
	}

	urlB, _, stderrB, _ := runServerFiles(t, bin, []*os.File{f}, "-udp-fd", "3", "-cert-dir", certDir)
	if urlB != urlA {
		t.Fatalf("the replacement on the same socket announced %s, want %s; stderr:\n%s", urlB, urlA, stderrB)
	}
	ping("the replacement on the same socket")
}

// TestUDPFDFlagErrors: -udp-fd that does not name an inherited bound UDP
// socket is a usage error (exit 2) that says which, before anything
// starts.
func TestUDPFDFlagErrors(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	tf, err := tcp.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	for _, c := range []struct {
		name  string
		fd    string
		files []*os.File
		want  string
	}{
		{"stdio", "2", nil, "descriptors 0 to 2"},
		{"not open", "7", nil, "not a bound UDP socket"},
		{"a TCP listener", "3", []*os.File{tf}, "not a bound UDP socket"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, "-udp-fd", c.fd, "-cert-dir", t.TempDir(), "-root", t.TempDir())
			cmd.ExtraFiles = c.files
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
				t.Errorf("-udp-fd %s (%s): %v, want exit 2 saying %q; output:\n%s", c.fd, c.name, err, c.want, out)
			}
		})
	}
}
