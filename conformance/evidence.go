package conformance

import (
	"fmt"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// evidence is what the judge saw the client do.
type evidence struct {
	finWait time.Duration // Options.FINWait, for the verdict's words

	mu        sync.Mutex
	connected bool
	initOK    bool            // the first frame was a JSON initialize with an mcp-flow transport
	transport initTransport   // as the client sent it
	encoding  codec.Name      // negotiated
	called    bool            // the client called the tool "scenario"
	ended     bool            // the session ended by itself (drain scenarios)
	callID    jsonrpc.ID      // ... with this id
	notes     []string        // findings, in order
	flags     map[string]bool // scenario findings ("stream complete"...)
	// teardown is how the control stream ended, when it ended otherwise
	// than by the client's FIN before the judge began to end the session:
	// the client closed the session or reset the stream. (A client that
	// exits at once may take its close with it: the judge sees only what
	// reaches it before the client's exit.)
	teardown string
	// unsolicited lists the client's error responses to nothing the judge
	// asked (e.g. an error with id null about a datagram).
	unsolicited []string
	// output is what the client wrote on stdout and stderr (both ends of
	// it: clientOutput), set once it has exited.
	output string
}

// initTransport is the transport object of the client's initialize (guide
// §3), with this project's `datagrams` addition.
type initTransport struct {
	Type      string   `json:"type"`
	Version   string   `json:"version"`
	Encodings []string `json:"encodings"`
	Datagrams *bool    `json:"datagrams"`
}

func (e *evidence) note(f string, a ...any) {
	e.mu.Lock()
	e.notes = append(e.notes, fmt.Sprintf(f, a...))
	e.mu.Unlock()
}

func (e *evidence) set(flag string) {
	e.mu.Lock()
	if e.flags == nil {
		e.flags = map[string]bool{}
	}
	e.flags[flag] = true
	e.mu.Unlock()
}

func (e *evidence) has(flag string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.flags[flag]
}

// wasCalled reports whether the client has called the tool "scenario".
func (e *evidence) wasCalled() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.called
}

func (e *evidence) setConnected() {
	e.mu.Lock()
	e.connected = true
	e.mu.Unlock()
}
