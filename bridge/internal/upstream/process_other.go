//go:build !unix

package upstream

import (
	"os"
	"os/exec"
	"syscall"
)

func ownGroup(*exec.Cmd) {}

// signalGroup ends the process pid where signals and process groups do not
// exist: both steps kill it.
func signalGroup(pid int, _ syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

const (
	sigTerm = syscall.Signal(15)
	sigKill = syscall.Signal(9)
)
