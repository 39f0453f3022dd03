package hostile

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"testing"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// Stdio is a subprocess whose stdin takes raw bytes (a stdio MCP server,
// such as the stdio front `mcp-flow bridge stdio`) and whose stdout is read
// one line (one NDJSON message) at a time.
type Stdio struct {
	Cmd    *exec.Cmd
	In     io.WriteCloser
	Stderr *flowtest.SyncBuffer
	lines  chan []byte
	exited chan struct{}
	err    error
}

// StartStdio starts bin with args. The test's cleanup closes its stdin,
// kills it if it is still running and reaps it.
func StartStdio(t testing.TB, bin string, args ...string) *Stdio {
	t.Helper()
	s := &Stdio{Cmd: exec.Command(bin, args...), Stderr: &flowtest.SyncBuffer{}, lines: make(chan []byte, 64), exited: make(chan struct{})}
	s.Cmd.Stderr = s.Stderr
	var err error
	if s.In, err = s.Cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.Cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReaderSize(out, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				s.lines <- line
			}
			if err != nil {
				break
			}
		}
		close(s.lines)
		s.err = s.Cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.In.Close()
		s.Cmd.Process.Kill()
		for range s.lines {
		}
		<-s.exited
	})
	return s
}

// Write writes b on the process's stdin as it is.
func (s *Stdio) Write(b []byte) error {
	_, err := s.In.Write(b)
	return err
}

// ReadLine returns the next line of stdout, bounded by ctx; io.EOF once
// stdout has ended.
func (s *Stdio) ReadLine(ctx context.Context) ([]byte, error) {
	select {
	case l, ok := <-s.lines:
		if !ok {
			return nil, io.EOF
		}
		return l, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Wait waits for the process to exit, at most until ctx ends, and returns
// its exit status (ErrStillRunning if ctx ended first). Its stdout must be
// read to the end (ReadLine) for it to be reaped.
func (s *Stdio) Wait(ctx context.Context) error {
	select {
	case <-s.exited:
		return s.err
	case <-ctx.Done():
		return ErrStillRunning
	}
}

// PID is the process id.
func (s *Stdio) PID() int { return s.Cmd.Process.Pid }
