package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestUpstreamWaitIsExplained: a server whose stdio -upstream is slow to
// start (as `npx -y …` is on first use) says what each session waits for
// and how long, and passes the upstream's stderr on; the CLI says what it
// waits for after dialPatience and, when its -handshake-timeout expires,
// which flag to raise (issue 14: it waited in silence, then said
// "initialize: context deadline exceeded").
func TestUpstreamWaitIsExplained(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	server := build(t, dir, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server")
	// An upstream that is still "fetching" when the CLI gives up; it ends
	// when its stdin closes (at the session's end).
	script := filepath.Join(dir, "upstream.sh")
	os.WriteFile(script, []byte("echo 'upstream: fetching the package' >&2\ncat >/dev/null\n"), 0o755)
	proc := exec.Command(server, "-addr", "127.0.0.1:0", "-cert-dir", t.TempDir(), "-upstream", "stdio:sh "+script)
	out, err := proc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := proc.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	var log flowtest.SyncBuffer
	lines := make(chan string, 64)
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		defer close(lines)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			log.Write([]byte(sc.Text() + "\n"))
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { proc.Process.Kill(); <-stderrDone; proc.Wait() })
	url, hash := announcement(out)
	if url == "" {
		t.Fatalf("no url; stderr:\n%s", log.String())
	}
	awaitLine := func(want string) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("server stderr ended without %q:\n%s", want, log.String())
				}
				if strings.Contains(l, want) {
					return
				}
			case <-timeout:
				t.Fatalf("no %q on the server's stderr in 20 s:\n%s", want, log.String())
			}
		}
	}
	awaitLine(`handshake-timeout=1m0s`)
	_, errOut, code := runCLI(t, cli(t), "-url", url, "-cert-hash", hash, "-handshake-timeout", "3s", "ping")
	if code != exitConnect {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitConnect, errOut)
	}
	for _, want := range []string{"waiting for " + url + " to connect and answer initialize", "no initialize answer within -handshake-timeout 3s"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the CLI does not say %q:\n%s", want, errOut)
		}
	}
	awaitLine("upstream: fetching the package")
}
