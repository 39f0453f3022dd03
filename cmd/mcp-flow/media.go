package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
)

// What the server sends besides results (spec §6): its log messages, as
// notifications/message or log datagrams, become lines on stderr; the
// audio datagrams of a call go to the -audio-out file.

// logLine formats the params of an MCP log message as the CLI prints it:
// "log LEVEL LOGGER: DATA", DATA as it is when it is a string and as JSON
// otherwise; a string with control characters (which could drive the
// terminal) is quoted.
func logLine(params json.RawMessage) (string, bool) {
	var p struct {
		Level  string          `json:"level"`
		Logger string          `json:"logger"`
		Data   json.RawMessage `json:"data"`
	}
	if json.Unmarshal(params, &p) != nil || p.Level == "" {
		return "", false
	}
	data := string(p.Data)
	var s string
	if json.Unmarshal(p.Data, &s) == nil {
		data = s
		if strings.ContainsFunc(s, unicode.IsControl) {
			data = strconv.Quote(s)
		}
	}
	line := "log " + sanitize(p.Level)
	if p.Logger != "" {
		line += " " + sanitize(p.Logger)
	}
	return line + ": " + data, true
}

// sanitize quotes s if it holds control characters.
func sanitize(s string) string {
	if strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
}

// mediaHooks returns the session hooks that print the server's log
// messages on t and give audio datagrams to audio (nil: none are kept).
func mediaHooks(t *term, audio *audioSink) flow.Hooks {
	say := func(params json.RawMessage) {
		if line, ok := logLine(params); ok {
			t.say("%s", line)
		}
	}
	return flow.Hooks{
		Notification: func(_ *flow.Session, n *jsonrpc.Request) {
			if n.Method == protocol.MethodLogMessage {
				say(n.Params)
			}
		},
		Datagram: func(_ *flow.Session, h wire.DatagramHeader, p json.RawMessage) {
			switch h.Channel {
			case wire.ChannelLog:
				say(p)
			case wire.ChannelAudio:
				if audio != nil {
					audio.take(p)
				}
			}
		},
	}
}

// audioTail bounds how long the CLI waits, after a result that tells how
// many audio chunks were sent, for those of them that trail it: datagrams
// travel beside the control stream and may come after the result, or never.
const audioTail = time.Second

// audioSink writes the PCM of audio datagrams ({seq, data}, as
// mcp-flow-server's tone sends them: spec §6.4) to a file, in order of
// arrival: a chunk whose seq is not above the last written one came late
// (overtaken) and is dropped; a gap in seq is a lost chunk, missing from the
// file (the audio after it comes earlier than it should). Both are counted
// for the summary. Safe for concurrent use.
type audioSink struct {
	mu                  sync.Mutex
	f                   *os.File
	next                int // the seq expected next
	bytes               int64
	chunks, lost, late  int
	bad                 int   // datagrams that are not {seq, data}
	err                 error // the first write error
	expect              int   // chunks the result says were sent (0: not told)
	reached             chan struct{}
	reachedAt, expected bool
}

func newAudioSink(path string) (*audioSink, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &audioSink{f: f}, nil
}

// take writes one audio datagram's payload.
func (a *audioSink) take(payload json.RawMessage) {
	var c struct {
		Seq  *int   `json:"seq"`
		Data []byte `json:"data"`
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if json.Unmarshal(payload, &c) != nil || c.Seq == nil || *c.Seq < 0 {
		a.bad++
		return
	}
	if *c.Seq < a.next {
		a.late++
		return
	}
	a.lost += *c.Seq - a.next
	a.next = *c.Seq + 1
	a.chunks++
	if a.err == nil {
		n, err := a.f.Write(c.Data)
		a.bytes += int64(n)
		a.err = err
	}
	if a.reached != nil && !a.reachedAt && a.next >= a.expect {
		a.reachedAt = true
		close(a.reached)
	}
}

// await waits, at most audioTail, until the chunks up to the n-th (the
// number a result says were sent) have come or were passed over.
func (a *audioSink) await(n int) {
	a.mu.Lock()
	a.expect, a.expected = n, true
	if a.next >= n {
		a.mu.Unlock()
		return
	}
	a.reached = make(chan struct{})
	reached := a.reached
	a.mu.Unlock()
	t := time.NewTimer(audioTail)
	defer t.Stop()
	select {
	case <-reached:
	case <-t.C:
	}
}

// close closes the file (after the session: no datagram comes later) and
// returns the summary for stderr.
func (a *audioSink) close(path string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.f.Close(); a.err == nil {
		a.err = err
	}
	lost := a.lost
	if a.expected && a.expect > a.next {
		lost += a.expect - a.next // the last chunks never came
	}
	s := fmt.Sprintf("mcp-flow: -audio-out %s: %d bytes of PCM from %d audio datagrams", path, a.bytes, a.chunks)
	var notes []string
	if lost > 0 {
		notes = append(notes, fmt.Sprintf("%d chunks lost (missing from the file)", lost))
	}
	if a.late > 0 {
		notes = append(notes, fmt.Sprintf("%d came late and were dropped", a.late))
	}
	if a.bad > 0 {
		notes = append(notes, fmt.Sprintf("%d were not {seq, data}", a.bad))
	}
	if len(notes) > 0 {
		s += "; " + strings.Join(notes, ", ")
	}
	return s, a.err
}
