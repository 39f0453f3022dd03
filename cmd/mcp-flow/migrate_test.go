//go:build linux

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	neturl "net/url"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// moveLine waits, within guard, for stderr's line that says a move was
// made (watchMoves) and returns it.
func moveLine(t *testing.T, stderr *flowtest.SyncBuffer, guard time.Duration) string {
	t.Helper()
	text, ok := stderr.Wait(guard, func(s string) bool { return strings.Contains(s, "moved") })
	if !ok {
		t.Fatalf("no move on stderr within %v:\n%s", guard, text)
	}
	for l := range strings.Lines(text) {
		if strings.Contains(l, "moved") {
			return strings.TrimSpace(l)
		}
	}
	return ""
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
			stderr := &flowtest.SyncBuffer{}
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
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
			line := moveLine(t, stderr, 30*time.Second)
			if !strings.Contains(line, how) || !strings.Contains(line, "moved 1 session") {
				t.Fatalf("the CLI said %q", line)
			}
			got, err := io.Copy(h, stdout)
			if werr := cmd.Wait(); werr != nil || err != nil || got+2<<20 != size {
				t.Fatalf("%d bytes, exit %v, read error %v; stderr:\n%s", got+2<<20, werr, err, stderr)
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

// TestBridgeStdioMigrates: `mcp-flow bridge stdio` moves its MCP-Flow
// session to a new local socket on SIGUSR1 (docs/spec.md §2.1), and its
// host's calls go on through the new one.
func TestBridgeStdioMigrates(t *testing.T) {
	t.Parallel()
	url, hash, _, _ := startServer(t, server(t))
	through, r := relayTo(t, url)
	cs, err, _, stderr, cmd := stdioHost(t, through, hash, "", "-transport", "mcp-flow")
	if err != nil {
		t.Fatal(err)
	}
	call := func(text string) {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text {
			t.Fatalf("echo %q: %v, %+v", text, err, res)
		}
	}
	call("before")
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	// Hang guard: the move is one round trip on loopback (a few ms).
	if line := moveLine(t, stderr, 30*time.Second); !strings.Contains(line, "SIGUSR1: moved 1 session") {
		t.Fatalf("the bridge said %q", line)
	}
	before := r.Mappings()
	call("after")
	ms := r.Mappings()
	if len(ms) != 2 || ms[1].Received <= before[1].Received {
		t.Fatalf("the relay's clients %+v, then %+v: the answer after the move did not come to the new socket", before, ms)
	}
}

// TestBridgeHTTPMigrates: `mcp-flow bridge http` moves the MCP-Flow session
// of each of its clients (one of 2025-11-25, one of 2026-07-28: each has a
// session of its own) to a new local socket on SIGUSR1, and the clients'
// calls go on through the new ones.
func TestBridgeHTTPMigrates(t *testing.T) {
	t.Parallel()
	url, hash, _, _ := startServer(t, server(t))
	through, r := relayTo(t, url)
	endpoint, stderr, bridge, _ := startBridgeHTTP(t, cli(t), "-cert-hash", hash, "bridge", "http", through)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // hang guard: each call takes milliseconds
	defer cancel()
	var sessions []*mcp.ClientSession
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "migrate-host", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		sessions = append(sessions, cs)
	}
	call := func(cs *mcp.ClientSession, text string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text {
			t.Fatalf("echo %q: %v, %+v", text, err, res)
		}
	}
	for _, cs := range sessions {
		call(cs, "before")
	}
	if err := syscall.Kill(bridge.Process.Pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if line := moveLine(t, stderr, 30*time.Second); !strings.Contains(line, "SIGUSR1: moved 2 session") {
		t.Fatalf("the bridge said %q; the relay's clients: %+v", line, r.Mappings())
	}
	before := r.Mappings()
	for _, cs := range sessions {
		call(cs, "after")
	}
	ms := r.Mappings()
	if len(before) != 4 || len(ms) != 4 || ms[2].Received <= before[2].Received || ms[3].Received <= before[3].Received {
		t.Fatalf("the relay's clients %+v, then %+v: the answers after the move did not come to the new sockets", before, ms)
	}
}
