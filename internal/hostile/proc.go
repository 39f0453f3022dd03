package hostile

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/gobuild"
)

// Build builds the commands cmds of this module (mcp-flow-server,
// mcp-flow) into dir, in one go build, and returns their paths.
func Build(dir string, cmds ...string) ([]string, error) {
	if os.Getenv(gobuild.DirEnv) != "" { // make test's run builds each once (dir is not used)
		var bins []string
		for _, c := range cmds {
			bin, err := gobuild.Build("github.com/mcp-flow/mcp-flow/cmd/" + c)
			if err != nil {
				return nil, err
			}
			bins = append(bins, bin)
		}
		return bins, nil
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	var bins []string
	for _, c := range cmds {
		args = append(args, "github.com/mcp-flow/mcp-flow/cmd/"+c)
		bins = append(bins, filepath.Join(dir, c))
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go build %v: %v\n%s", cmds, err, out)
	}
	return bins, nil
}

// Server is an mcp-flow-server subprocess on 127.0.0.1.
type Server struct {
	URL    string
	Hash   string      // the certificate's SHA-256, hex
	TLS    *tls.Config // pins the server's certificate
	Cmd    *exec.Cmd
	Stderr *flowtest.SyncBuffer
	exited chan struct{}
	err    error // the exit status, once exited is closed
}

// StartServer starts bin with args (after -addr 127.0.0.1:0, a certificate
// directory and a root in t.TempDir()) and reads its URL and certificate
// hash from stdout. The test's cleanup kills the server if it is still
// running and reaps it.
func StartServer(t testing.TB, bin string, args ...string) *Server {
	t.Helper()
	return StartServerEnv(t, bin, nil, args...)
}

// StartServerEnv is StartServer with env added to the server's
// environment (such as GODEBUG=gctrace=1, for LiveHeap).
func StartServerEnv(t testing.TB, bin string, env []string, args ...string) *Server {
	t.Helper()
	all := append([]string{"-addr", "127.0.0.1:0", "-cert-dir", t.TempDir(), "-root", t.TempDir()}, args...)
	s := &Server{Cmd: exec.Command(bin, all...), Stderr: &flowtest.SyncBuffer{}, exited: make(chan struct{})}
	if env != nil {
		s.Cmd.Env = append(os.Environ(), env...)
	}
	s.Cmd.Stderr = s.Stderr
	stdout, err := s.Cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && (s.URL == "" || s.Hash == "") {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		switch k {
		case "url":
			s.URL = v
		case "cert-sha256":
			s.Hash = v
		}
	}
	go func() {
		// stdout carries nothing more; keep the pipe drained all the same.
		for sc.Scan() {
		}
		s.err = s.Cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.Cmd.Process.Kill()
		<-s.exited
	})
	if s.URL == "" || s.Hash == "" {
		s.Cmd.Process.Kill()
		<-s.exited
		t.Fatalf("mcp-flow-server %v: no url and hash on stdout (exit: %v); stderr:\n%s", all, s.err, s.Stderr)
	}
	pin, err := certs.ParseHash(s.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if s.TLS, err = certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{pin}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// PID is the server's process id.
func (s *Server) PID() int { return s.Cmd.Process.Pid }

// Exited is closed once the server has exited and been reaped.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Wait waits for the server to exit, at most until ctx ends, and returns
// its exit status (ErrStillRunning if ctx ended first).
func (s *Server) Wait(ctx context.Context) error {
	select {
	case <-s.exited:
		return s.err
	case <-ctx.Done():
		return ErrStillRunning
	}
}

// Signal sends sig to the server.
func (s *Server) Signal(sig syscall.Signal) error { return s.Cmd.Process.Signal(sig) }

// Mem is a process's memory as /proc/PID/status reports it.
type Mem struct {
	RSS, HWM int64 // VmRSS and VmHWM (its peak), in bytes
	Threads  int
}

func (m Mem) String() string {
	return fmt.Sprintf("RSS %.1f MiB (peak %.1f MiB), %d threads", float64(m.RSS)/(1<<20), float64(m.HWM)/(1<<20), m.Threads)
}

// Mem reads the server's memory and thread count.
func (s *Server) Mem() (Mem, error) { return ReadMem(s.PID()) }

// ReadMem reads VmRSS, VmHWM and Threads from /proc/pid/status.
func ReadMem(pid int) (Mem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Mem{}, err
	}
	var m Mem
	for line := range bytes.Lines(b) {
		k, v, ok := strings.Cut(string(line), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			m.RSS = n << 10
		case "VmHWM":
			m.HWM = n << 10
		case "Threads":
			m.Threads = int(n)
		}
	}
	if m.RSS == 0 {
		return m, fmt.Errorf("hostile: no VmRSS in /proc/%d/status", pid)
	}
	return m, nil
}

// CPU reads the server's CPU time so far.
func (s *Server) CPU() (time.Duration, error) { return ReadCPU(s.PID()) }

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports (the kernel's ABI fixes it).
const clockTick = 10 * time.Millisecond

// ReadCPU reads a process's user and system time (utime + stime, fields 14
// and 15 of /proc/pid/stat), in steps of 10 ms.
func ReadCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("hostile: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 13 {
		return 0, fmt.Errorf("hostile: malformed /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("hostile: malformed /proc/%d/stat", pid)
	}
	return time.Duration(u+st) * clockTick, nil
}

// GCTrace is the last garbage collection a server started with
// GODEBUG=gctrace=1 reported on its stderr: its number and the heap it
// found live (the third figure of "A->B->C MB").
type GCTrace struct {
	N    int
	Live int64 // bytes
}

// LastGC parses the server's last gctrace line; N is 0 before the first.
func (s *Server) LastGC() GCTrace {
	out := s.Stderr.String()
	i := strings.LastIndex(out, "\ngc ")
	if i < 0 {
		if !strings.HasPrefix(out, "gc ") {
			return GCTrace{}
		}
	} else {
		out = out[i+1:]
	}
	line, _, _ := strings.Cut(out, "\n")
	var g GCTrace
	f := strings.Fields(line)
	if len(f) < 2 {
		return GCTrace{}
	}
	g.N, _ = strconv.Atoi(f[1])
	for j, w := range f {
		if w == "MB," && j > 0 && strings.Count(f[j-1], "->") == 2 {
			parts := strings.Split(f[j-1], "->")
			mb, _ := strconv.ParseInt(parts[2], 10, 64)
			g.Live = mb << 20
			break
		}
	}
	return g
}
