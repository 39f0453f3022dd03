//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryStreamNotToTerminal: with stdout on a terminal (a real
// pseudo-terminal), the CLI does not write a binary execution stream there:
// it says on stderr to pipe stdout or use -out, and exits 2; the terminal
// shows nothing. A text/* stream goes to the terminal; /dev/null, which is a
// character device but no terminal, takes binary bytes.
func TestBinaryStreamNotToTerminal(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(root+"/hello.txt", []byte("hello from a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url, hash, _, _, _ := liveServer(t, server(t), "-root", root) // the last -root wins
	base := []string{"-url", url, "-cert-hash", hash}
	run := func(args ...string) (screen string, stderr string, code int) {
		t.Helper()
		pty, tty := openPTY(t)
		cmd := exec.Command(cli(t), append(base, args...)...)
		var e bytes.Buffer
		cmd.Stdout, cmd.Stderr = tty, &e
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tty.Close()
		scr := watch(pty)
		code = exitCode(t, cmd, &e)
		<-scr.done
		return scr.String(), e.String(), code
	}
	scr, errOut, code := run("call", "generate", "bytes=100000")
	if code != exitUsage || !strings.Contains(errOut, `execution stream 1 is "application/octet-stream", not text: not writing it to a terminal; pipe stdout`) || !strings.Contains(errOut, "-out DIR") {
		t.Fatalf("binary stream to a terminal: exit %d, want %d; stderr:\n%s", code, exitUsage, errOut)
	}
	if scr != "" {
		t.Fatalf("the terminal shows %d bytes: %q…", len(scr), scr[:min(len(scr), 40)])
	}
	scr, errOut, code = run("call", "read_file", "path=hello.txt")
	if code != exitOK || !strings.Contains(scr, "hello from a file") {
		t.Fatalf("text stream to a terminal: exit %d, terminal %q, stderr:\n%s", code, scr, errOut)
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	cmd := exec.Command(cli(t), append(base, "call", "generate", "bytes=100000")...)
	var e bytes.Buffer
	cmd.Stdout, cmd.Stderr = devNull, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd, &e); code != exitOK {
		t.Fatalf("binary stream to /dev/null: exit %d; stderr:\n%s", code, e.String())
	}
}
