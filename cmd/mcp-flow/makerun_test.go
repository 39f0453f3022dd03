//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestMakeRunCtrlC: `make run` started as from a shell (a process group of
// its own) and ended with Ctrl-C (SIGINT to that whole group, as a terminal
// sends it) ends cleanly: the server shuts down and make says nothing of
// an error (with go run it said "Error 1": go run exits 1 after an
// interrupt; issue 14).
func TestMakeRunCtrlC(t *testing.T) { makeRunCtrlC(t, false) }

// TestMakeRunCtrlCMakeLate: the same when make gets to its SIGINT only
// after the server has exited, as on a loaded machine. GNU make 4.3 races
// there: if its child is a zombie when make next runs, its wait in the main
// loop reaps it, and the SIGINT handler that runs before make has counted
// it waits again and prints "*** wait: No child processes.  Stop." (seen
// under two suites side by side). So make's child (the recipe's shell, the
// server's parent) must outlive the server until make has taken its SIGINT
// (Makefile, run). The test stops make before the Ctrl-C, so that the
// signal stays pending in it while the server shuts down, checks that
// make's child still runs (with the server exec'd in the recipe, make's
// child was the server, a zombie by then), and lets make go on.
func TestMakeRunCtrlCMakeLate(t *testing.T) { makeRunCtrlC(t, true) }

func makeRunCtrlC(t *testing.T, makeLate bool) {
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
	serving, shutDown := make(chan bool, 1), make(chan struct{})
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(pipe)
		found, down := false, false
		for sc.Scan() {
			all.Write([]byte(sc.Text() + "\n"))
			if !found && strings.Contains(sc.Text(), "msg=serving") {
				found = true
				serving <- true
			}
			if !down && strings.Contains(sc.Text(), "shut down cleanly") {
				down = true
				close(shutDown)
			}
		}
		if !found {
			serving <- false
		}
		if !down {
			close(shutDown)
		}
	}()
	if !<-serving {
		<-stderrDone
		cmd.Wait()
		t.Fatalf("make run never served:\n%s", all.String())
	}
	if makeLate {
		if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// Stopped before the SIGINT comes, or it would take SIGINT first
		// (the lower number) and stop in its handler.
		waitState(t, cmd.Process.Pid, "T", &all)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if makeLate {
		<-shutDown
		// The server has said it is done; give it the moment to exit that
		// make, stopped, does not get.
		waitServerExited(t, cmd.Process.Pid, &all)
		if kids := children(cmd.Process.Pid); len(kids) == 0 || slices.Contains(kids, "Z") {
			t.Errorf("make's children (states) once the server has exited with make's SIGINT pending: %v, want its recipe's shell still running", kids)
		}
		if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
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

// waitServerExited waits (10 s at most) until no mcp-flow-server of
// process group pgid runs: gone, or a zombie its parent has not reaped.
func waitServerExited(t *testing.T, pgid int, out fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		running := false
		dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, d := range dirs {
			b, err := os.ReadFile(d)
			if err != nil {
				continue
			}
			// pid (comm) state ppid pgrp ...
			st := string(b)
			i := strings.LastIndexByte(st, ')')
			if i < 0 || !strings.Contains(st[:i], "(mcp-flow-server") {
				continue
			}
			f := strings.Fields(st[i+1:])
			if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
				running = true
			}
		}
		if !running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcp-flow-server still runs 10 s after it shut down; output:\n%s", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// children returns the states of pid's child processes (/proc).
func children(pid int) []string {
	var states []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(st[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			states = append(states, f[0])
		}
	}
	return states
}

// waitState waits (10 s at most) until process pid is in state (/proc).
func waitState(t *testing.T, pid int, state string, out fmt.Stringer) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		st := string(b)
		if f := strings.Fields(st[strings.LastIndexByte(st, ')')+1:]); len(f) > 0 && f[0] == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not in state %s after 10 s; output:\n%s", pid, state, out)
		}
	}
}
