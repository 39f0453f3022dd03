package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// The stdio upstream's processes (spec §10, "Processes"): one per session, in
// a process group of its own, capped, stopped after a grace, always reaped.

// StdioUpstreamConfig configures an upstream that runs a stdio MCP server,
// one process per MCP-Flow session (spec §10). It is copied by
// NewStdioUpstream.
type StdioUpstreamConfig struct {
	// Command is the server's argv. Required.
	Command []string
	// MaxProcesses bounds the upstream processes running at once, whatever
	// the sessions limit (spec §8): a process counts from its start until it
	// is reaped. Past it a session's initialize is refused with -32005.
	// Default DefaultMaxUpstreamProcesses (64).
	MaxProcesses int
	// StopGrace: when its session ends, a process gets end of input, then
	// SIGTERM after StopGrace if it is still running, then SIGKILL after
	// another StopGrace; its process group goes with it, and it is always
	// reaped (spec §10). Default DefaultStopGrace (2 s).
	StopGrace time.Duration
	// Stderr receives the processes' stderr. Default os.Stderr.
	Stderr io.Writer
	// Threshold: content larger than this many bytes goes on execution
	// streams (0: 256 KiB).
	Threshold int
	// Queue bounds the messages waiting for the upstream per session
	// (default DefaultUpstreamQueue; spec §10, "Backpressure").
	Queue int
	// Protocol is the upstream's MCP era: UpstreamAuto (default),
	// UpstreamModern (2026-07-28) or UpstreamLegacy (the 2025 revisions;
	// a 2025 version string means the same); spec §10, "Eras".
	Protocol string
	// ProbeTimeout bounds the wait for the answer to a server/discover
	// probe (default DefaultProbeTimeout).
	ProbeTimeout time.Duration
	Logger       *slog.Logger
	// Observe, if set, receives a flow.EventUpstreamStart (Outcome
	// "start") for each process started, on the session's goroutine, and
	// one flow.EventUpstreamExit (Outcome "exit", Code its exit status) for
	// each when it is reaped, on the reaper's goroutine, before the
	// session's stop of it returns (package metrics counts both). It must
	// not block.
	Observe func(flow.Event)
}

// NewStdioUpstream returns an upstream that spawns cfg.Command per session.
// It panics on a Protocol that is not one of the eras (check it with
// CheckUpstreamProtocol first).
func NewStdioUpstream(cfg StdioUpstreamConfig) *Upstream {
	if cfg.MaxProcesses <= 0 {
		cfg.MaxProcesses = DefaultMaxUpstreamProcesses
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	slots := make(chan struct{}, cfg.MaxProcesses)
	start := func(context.Context) (io.WriteCloser, io.Reader, func(), error) {
		return startProcess(cfg, slots)
	}
	u := newPipeUpstream(start, cfg.Threshold, cfg.Queue, cfg.Logger)
	if err := u.setEra(cfg.Protocol, cfg.ProbeTimeout); err != nil {
		panic(err)
	}
	return u
}

// startProcess starts one upstream process, if a slot is free.
func startProcess(cfg StdioUpstreamConfig, slots chan struct{}) (io.WriteCloser, io.Reader, func(), error) {
	if len(cfg.Command) == 0 {
		return nil, nil, nil, errors.New("upstream: no command")
	}
	select {
	case slots <- struct{}{}:
	default:
		e := jsonrpc.NewError(jsonrpc.CodeTooManyRequests, fmt.Sprintf("this server runs its limit of %d upstream processes (spec §8); try again later", cap(slots)))
		e.Data, _ = json.Marshal(map[string]int{"maxProcesses": cap(slots)})
		return nil, nil, nil, e
	}
	release := func() { <-slots }
	// Pipes of our own, not StdoutPipe: Wait then closes nothing that the
	// reader still reads, and Close unblocks a write the process does not
	// take.
	inR, inW, err := os.Pipe()
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		release()
		return nil, nil, nil, err
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, cfg.Stderr
	cmd.WaitDelay = cfg.StopGrace // a child that keeps stderr open does not hold Wait
	ownGroup(cmd)
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		release()
		return nil, nil, nil, fmt.Errorf("upstream %s: %w", cfg.Command[0], err)
	}
	if cfg.Observe != nil {
		// Each session starts its own; nothing restarts one (a session
		// whose upstream ended is shut down, spec §10).
		cfg.Observe(flow.Event{Kind: flow.EventUpstreamStart, Server: true, Outcome: "start"})
	}
	p := &process{cmd: cmd, grace: cfg.StopGrace, log: cfg.Logger, exited: make(chan struct{})}
	go func() { // the reaper: runs whenever the process ends, session or not
		err := cmd.Wait()
		// What is left of its group goes too, at once: later, its id
		// could name another group.
		signalGroup(cmd.Process.Pid, sigKill)
		p.log.Debug("upstream process ended", "pid", cmd.Process.Pid, "status", err)
		if cfg.Observe != nil {
			// Exactly once: Wait returns once per started process.
			cfg.Observe(flow.Event{Kind: flow.EventUpstreamExit, Server: true, Outcome: "exit", Code: int64(cmd.ProcessState.ExitCode())})
		}
		release()
		close(p.exited)
	}()
	return inW, outR, func() { p.stop(); outR.Close() }, nil
}

// process is one running upstream process.
type process struct {
	cmd    *exec.Cmd
	grace  time.Duration
	log    *slog.Logger
	exited chan struct{} // closed once it is reaped
}

// stop ends the process after its input was closed: SIGTERM after the
// grace period, SIGKILL after another (to its process group). It returns
// once the process is reaped (and what was left of its group killed).
func (p *process) stop() {
	pid := p.cmd.Process.Pid
	t := time.NewTimer(p.grace)
	defer t.Stop()
	for _, sig := range []syscall.Signal{sigTerm, sigKill} {
		select {
		case <-p.exited:
			return
		case <-t.C:
		}
		p.log.Warn("upstream process still running; signalling it", "pid", pid, "signal", sig.String(), "after", p.grace)
		signalGroup(pid, sig)
		t.Reset(p.grace)
	}
	<-p.exited
}
