package flowtest

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// ServerProcess runs the mcp-flow-server binary bin on a free loopback
// port, its certificate and -root in a directory of the test, with the
// flags extra, and returns the URL and certificate hash it prints. It is
// stopped with SIGTERM at the end of the test (it drains and stops its
// upstream processes before it exits: nothing is left) and waited for;
// a server that fails to exit cleanly within 30 s fails the test.
func ServerProcess(t testing.TB, bin string, extra ...string) (url, hash string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-cert-dir", dir, "-root", dir}, extra...)...)
	stderr := &SyncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("mcp-flow-server after SIGTERM: %v; stderr:\n%s", err, stderr)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("mcp-flow-server still running 30 s after SIGTERM; stderr:\n%s", stderr)
		}
	})
	url, hash = Announcement(stdout)
	if url == "" || hash == "" {
		t.Fatalf("mcp-flow-server printed no url and cert-sha256; stderr:\n%s", stderr)
	}
	return url, hash
}
