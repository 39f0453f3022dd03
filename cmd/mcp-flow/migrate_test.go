//go:build linux

package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	neturl "net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
)

// relayTo puts a lossrelay in front of the server at url and returns the
// URL through it.
func relayTo(t *testing.T, url string) (string, *lossrelay.Relay) {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	to, err := net.ResolveUDPAddr("udp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	r, err := lossrelay.New(lossrelay.Config{Target: to})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	u.Host = r.Addr().String()
	return u.String(), r
}

// lines collects a reader's lines and signals each one that contains a
// word it was asked to wait for.
type lines struct {
	mu   sync.Mutex
	all  []string
	seen chan string
}

func readLines(r io.Reader) *lines {
	l := &lines{seen: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			l.mu.Unlock()
			l.seen <- sc.Text()
		}
		close(l.seen)
	}()
	return l
}

// waitFor waits for a line containing word, within the hang guard.
func (l *lines) waitFor(t *testing.T, word string, guard time.Duration) string {
	t.Helper()
	timeout := time.After(guard)
	for {
		select {
		case line, ok := <-l.seen:
			if !ok {
				t.Fatalf("stderr ended without %q", word)
			}
			if strings.Contains(line, word) {
				return line
			}
		case <-timeout:
			t.Fatalf("no %q on stderr within %v", word, guard)
		}
	}
}

// TestCLIMigrates: `mcp-flow call generate` moves its session to a new
// local socket on SIGUSR1 in the middle of a 16 MiB stream, and once after
// -migrate-after (docs/spec.md §2.1): the stream arrives byte-exact, the
// relay in front of the server sees a second client, and the server sent
// most of the stream to it.
func TestCLIMigrates(t *testing.T) {
	t.Parallel()
	url, hash, _, _ := startServer(t, server(t))
	const size = 16 << 20
	for _, how := range []string{"SIGUSR1", "-migrate-after"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			through, r := relayTo(t, url)
			args := []string{"-url", through, "-cert-hash", hash, "call", "generate", "bytes=" + strconv.Itoa(size)}
			if how == "-migrate-after" {
				args = append([]string{"-migrate-after", "20ms"}, args...)
			}
			cmd := exec.Command(cli(t), args...)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			stderrR, stderrW := io.Pipe()
			cmd.Stderr = stderrW
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			errs := readLines(stderrR)
			// The stream's first 2 MiB, then (for SIGUSR1) the move; the
			// CLI writes no more than its windows (6 MiB at most) while
			// the test does not read, so most of the stream is still to come.
			h := sha256.New()
			if _, err := io.CopyN(h, stdout, 2<<20); err != nil {
				t.Fatalf("first 2 MiB: %v", err)
			}
			if how == "SIGUSR1" {
				if err := syscall.Kill(cmd.Process.Pid, syscall.SIGUSR1); err != nil {
					t.Fatal(err)
				}
			}
			// Hang guard: the move takes a few ms here (one round trip on
			// loopback) and the CLI says so at once.
			line := errs.waitFor(t, "moved", 30*time.Second)
			if !strings.Contains(line, how) || !strings.Contains(line, "moved 1 session") {
				t.Fatalf("the CLI said %q", line)
			}
			got, err := io.Copy(h, stdout)
			stderrW.Close()
			if werr := cmd.Wait(); werr != nil || err != nil || got+2<<20 != size {
				t.Fatalf("%d bytes, exit %v, read error %v; stderr:\n%s", got+2<<20, werr, err, strings.Join(errs.all, "\n"))
			}
			if hex.EncodeToString(h.Sum(nil)) != demotools.GenerateSHA256(size) {
				t.Fatal("SHA-256 of the stream differs from the generator's")
			}
			ms := r.Mappings()
			if len(ms) != 2 {
				t.Fatalf("the relay saw %d clients, want the CLI's first socket and its new one", len(ms))
			}
			t.Logf("the server sent %d bytes to the first socket, %d to the new one", ms[0].Received, ms[1].Received)
			if ms[1].Received < size/4 {
				t.Fatalf("the server sent %d bytes to the CLI's new socket, less than a quarter of the stream: the move was not mid-transfer", ms[1].Received)
			}
		})
	}
}
