package flowtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// PipeMessage is a message to a PipeServer.
type PipeMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// PipeServer is an in-process stdio MCP server (for
// bridge.NewPipeUpstream) that
// writes the line answer returns for each message it reads ("": none);
// when answer says die, its output ends and its input is read to its end.
// answer is called from the goroutine of each session it starts.
func PipeServer(answer func(m PipeMessage) (line string, die bool)) func(context.Context) (io.WriteCloser, io.Reader, func(), error) {
	return PipeSessions(func(in io.Reader, out io.WriteCloser) {
		dec := json.NewDecoder(in)
		for {
			var m PipeMessage
			if dec.Decode(&m) != nil {
				return
			}
			line, die := answer(m)
			if die {
				out.Close()
				io.Copy(io.Discard, in)
				return
			}
			if line != "" {
				fmt.Fprintln(out, line)
			}
		}
	})
}

// PipeSessions is an in-process stdio MCP server (for
// bridge.NewPipeUpstream) that runs serve on a goroutine for each session
// it starts, with the session's input and output; the output is closed
// when serve returns.
func PipeSessions(serve func(in io.Reader, out io.WriteCloser)) func(context.Context) (io.WriteCloser, io.Reader, func(), error) {
	return func(context.Context) (io.WriteCloser, io.Reader, func(), error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer outW.Close()
			serve(inR, outW)
		}()
		return inW, outR, func() { <-done }, nil
	}
}
