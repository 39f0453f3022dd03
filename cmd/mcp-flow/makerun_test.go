//go:build linux

package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestMakeRunCtrlC: `make run` started as from a shell (a process group of
// its own) and ended with Ctrl-C (SIGINT to that whole group, as a terminal
// sends it) ends cleanly: the server shuts down and make says nothing of
// an error (with go run it said "Error 1": go run exits 1 after an
// interrupt; issue 14).
func TestMakeRunCtrlC(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here (Debian package make)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-C", root, "run", "BIN="+t.TempDir(),
		"RUN_ARGS=-addr 127.0.0.1:0 -cert-dir "+t.TempDir()+" -root "+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var all flowtest.SyncBuffer
	cmd.Stdout = &all
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	serving := make(chan bool, 1)
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(pipe)
		found := false
		for sc.Scan() {
			all.Write([]byte(sc.Text() + "\n"))
			if !found && strings.Contains(sc.Text(), "msg=serving") {
				found = true
				serving <- true
			}
		}
		if !found {
			serving <- false
		}
	}()
	if !<-serving {
		<-stderrDone
		cmd.Wait()
		t.Fatalf("make run never served:\n%s", all.String())
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-stderrDone
	// make itself ends as a Ctrl-C'd program does: killed by SIGINT (a
	// shell then reports status 130), and says nothing more.
	code := exitCode(t, cmd, &all)
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	byInt := ws.Signaled() && ws.Signal() == syscall.SIGINT
	if (code != 0 && !byInt) || strings.Contains(all.String(), "***") || !strings.Contains(all.String(), "shut down cleanly") {
		t.Fatalf("make run after Ctrl-C: %v; output:\n%s", cmd.ProcessState, all.String())
	}
}
