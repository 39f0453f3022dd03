package upstream

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"

	"github.com/mcp-flow/mcp-flow/bridge/plainio"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// An upstream over a pair of pipes speaking NDJSON (the MCP stdio
// transport): a process's (process.go) or an in-process server's
// (ServeSDK).

// NewPipeUpstream returns an upstream that reaches, per session, whatever
// start connects: newline-delimited JSON written to stdin and read from
// stdout (an in-process go-sdk server, for instance; see ServeSDK). wait is
// called once stdin is closed, and returns once the upstream has ended.
func NewPipeUpstream(start func(ctx context.Context) (stdin io.WriteCloser, stdout io.Reader, wait func(), err error), threshold int, log *slog.Logger) *Upstream {
	return newPipeUpstream(start, threshold, 0, log)
}

func newPipeUpstream(start func(ctx context.Context) (io.WriteCloser, io.Reader, func(), error), threshold, queue int, log *slog.Logger) *Upstream {
	u := newUpstream(nil, threshold, queue, log)
	u.dial = func(ctx context.Context, recv func(jsonrpc.Message), end func(error)) (upstreamLink, error) {
		stdin, stdout, wait, err := start(ctx)
		if err != nil {
			return nil, err
		}
		go readNDJSON(stdout, recv, end, u.log)
		return &pipeLink{stdin: stdin, wait: wait}, nil
	}
	return u
}

// pipeLink speaks NDJSON over a pair of pipes (MCP stdio transport).
type pipeLink struct {
	stdin io.WriteCloser
	wait  func()
	buf   []byte // the writer's; reused
}

func (l *pipeLink) send(m jsonrpc.Message) error {
	l.buf = append(jsonrpc.AppendJSON(l.buf[:0], m), '\n')
	_, err := l.stdin.Write(l.buf)
	if cap(l.buf) > 1<<20 {
		l.buf = nil
	}
	return err
}

func (l *pipeLink) close() {
	l.stdin.Close() // end of input: the upstream ends on EOF (seeds 000/002)
	l.wait()
}

// readNDJSON hands the messages of stdout to recv until it ends, then calls
// end with the reason.
func readNDJSON(stdout io.Reader, recv func(jsonrpc.Message), end func(error), log *slog.Logger) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), plainio.MaxMessage)
	for sc.Scan() {
		p, err := codec.Default(codec.JSON).Decode(bytes.Clone(sc.Bytes()))
		if err != nil {
			log.Warn("upstream wrote a non-JSON line", "err", err)
			continue
		}
		msgs, _ := jsonrpc.Validate(p)
		for _, m := range msgs {
			recv(m)
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	end(err)
}
