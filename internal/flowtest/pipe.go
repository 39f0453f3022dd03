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
	return func(context.Context) (io.WriteCloser, io.Reader, func(), error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer outW.Close()
			dec := json.NewDecoder(inR)
			for {
				var m PipeMessage
				if dec.Decode(&m) != nil {
					return
				}
				line, die := answer(m)
				if die {
					outW.Close()
					io.Copy(io.Discard, inR)
					return
				}
				if line != "" {
					fmt.Fprintln(outW, line)
				}
			}
		}()
		return inW, outR, func() { <-done }, nil
	}
}
