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

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	pid, ppid, pgrp int
	comm, state     string
}

// procStats reads /proc/*/stat: every process's, or only pid's (pid > 0).
func procStats(pid int) []procStat {
	glob := "/proc/[0-9]*/stat"
	if pid > 0 {
		glob = fmt.Sprintf("/proc/%d/stat", pid)
	}
	var out []procStat
	files, _ := filepath.Glob(glob)
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		st := string(b)
		i, j := strings.IndexByte(st, '('), strings.LastIndexByte(st, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(st[j+1:])
		if len(f) < 3 {
			continue
		}
		p := procStat{comm: st[i+1 : j], state: f[0]}
		p.pid, _ = strconv.Atoi(strings.TrimSpace(st[:i]))
		p.ppid, _ = strconv.Atoi(f[1])
		p.pgrp, _ = strconv.Atoi(f[2])
		out = append(out, p)
	}
	return out
}

// waitFor waits (10 s at most) until done says yes, reading /proc again
// every millisecond; what names what it waited for.
func waitFor(t *testing.T, what string, out fmt.Stringer, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !done(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10 s; output:\n%s", what, out)
		}
	}
}

// waitServerExited waits until no mcp-flow-server of process group pgid
// runs: gone, or a zombie its parent has not reaped.
func waitServerExited(t *testing.T, pgid int, out fmt.Stringer) {
	t.Helper()
	waitFor(t, "mcp-flow-server exited", out, func() bool {
		for _, p := range procStats(0) {
			if p.comm == "mcp-flow-server" && p.pgrp == pgid && p.state != "Z" {
				return false
			}
		}
		return true
	})
}

// children returns the states of pid's child processes.
func children(pid int) []string {
	var states []string
	for _, p := range procStats(0) {
		if p.ppid == pid {
			states = append(states, p.state)
		}
	}
	return states
}

// waitState waits until process pid is in state.
func waitState(t *testing.T, pid int, state string, out fmt.Stringer) {
	t.Helper()
	waitFor(t, fmt.Sprintf("process %d in state %s", pid, state), out, func() bool {
		st := procStats(pid)
		return len(st) == 1 && st[0].state == state
	})
}
