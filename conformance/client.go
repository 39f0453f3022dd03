package conformance

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// Client mode: the runner serves one scenario at a time and runs the client
// under test against it, as the official MCP conformance suite does for MCP
// clients. The client contract:
//
//	CMD... call scenario
//
// with MCP_FLOW_URL and MCP_FLOW_CERT_HASH (hex SHA-256) in the environment.
// The client connects, initializes, calls the tool "scenario" with no
// arguments, reads every execution stream of the result to its end, ends the
// session, and exits 0 on success and non-zero on any failure.

// ClientTarget is the client under test.
type ClientTarget struct {
	Command []string // e.g. {"mcp-flow"}; "call", "scenario" are appended
	// TLS is the server's configuration; CertHash is given to the client.
	TLS      *tls.Config
	CertHash string
	Env      []string // extra environment
}

// scenario is one client-mode check: what the judge's tool "scenario" does
// and what the judge concludes.
type scenario struct {
	Check
	encodings []codec.Name
	// tool is the behaviour of the tool "scenario" (see judge.go; what it
	// may do: judge_call.go).
	tool func(ctx context.Context, c *judgeCall) (any, error)
	// judge turns the client's exit and the evidence into an outcome; it
	// runs once the session is over.
	judge func(exit int, ev *evidence) outcome
	// drain: the judge lets the session end by itself (the drain of
	// $/shutdown) before it is closed.
	drain bool
}

func text(s string) map[string]any {
	return map[string]any{"content": []any{map[string]string{"type": "text", "text": s}}}
}

// exitOK passes a client that exited 0 and gave the judge nothing to note.
func exitOK(exit int, ev *evidence) outcome {
	if len(ev.notes) > 0 {
		return fail("%v (exit %d)", ev.notes, exit)
	}
	if exit != 0 {
		return fail("client exited %d", exit)
	}
	return pass("client exited 0")
}

func answer(context.Context, *judgeCall) (any, error) { return text("ok"), nil }

// shutdownTool sends $/shutdown before its answer, then the judge drains and
// closes the session (guide §1, §7).
func shutdownTool(_ context.Context, c *judgeCall) (any, error) {
	if err := c.shutdown(); err != nil {
		return nil, err
	}
	c.after = c.js.startDrain
	return text("ok"), nil
}

func clientScenarios() []scenario {
	json1 := []codec.Name{codec.JSON}
	return []scenario{
		{Check: Check{ID: "client.basic", Level: MUST, Source: Guide, Section: "2,4", Title: "the client initializes in JSON and calls a tool"},
			encodings: json1, tool: answer, judge: exitOK},
		{Check: Check{ID: "client.ids", Level: MUST, Source: Guide, Section: "3.2", Title: "the client's request ids fit 32 bits"},
			encodings: json1,
			tool: func(_ context.Context, c *judgeCall) (any, error) {
				if _, err := c.requestID(); err != nil {
					c.note("%v", err)
				}
				return text("ok"), nil
			},
			judge: exitOK},
		{Check: Check{ID: "client.cbor", Level: MUST, Source: Guide, Section: "4.2", Title: "after choosing cbor the client speaks CBOR"},
			encodings: []codec.Name{codec.CBOR, codec.JSON}, tool: answer,
			judge: func(exit int, ev *evidence) outcome {
				if ev.encoding != codec.CBOR {
					return skip("the client did not offer cbor")
				}
				return exitOK(exit, ev)
			}},
		{Check: Check{ID: "client.stream", Level: MUST, Source: Guide, Section: "5", Title: "the client reads an execution stream to its end"},
			encodings: json1,
			tool: func(ctx context.Context, c *judgeCall) (any, error) {
				w, ref, err := c.openStream(ctx, "application/octet-stream")
				if err != nil {
					return nil, err
				}
				c.spawn(func() {
					// 8 MiB: more than flow control lets through unread.
					n, err := io.Copy(w, generated(8<<20))
					if err != nil {
						c.note("stream write stopped after %d bytes: %v", n, err)
						return
					}
					c.js.ev.set("stream complete")
					_ = w.Close()
				})
				return map[string]any{"content": []any{ref}}, nil
			},
			judge: func(exit int, ev *evidence) outcome {
				if !ev.flags["stream complete"] {
					return fail("the stream was not read to its end: %v (exit %d)", ev.notes, exit)
				}
				return exitOK(exit, ev)
			}},
		{Check: Check{ID: "client.stream-error", Level: MUST, Source: Guide, Section: "5.4", Title: "the client does not take a failed stream for a whole one"},
			encodings: json1,
			tool: func(ctx context.Context, c *judgeCall) (any, error) {
				w, ref, err := c.openStream(ctx, "application/octet-stream")
				if err != nil {
					return nil, err
				}
				wrote := make(chan struct{})
				c.spawn(func() {
					defer close(wrote)
					_, _ = io.Copy(w, generated(100_000))
				})
				// After the answer: the stream fails mid-transfer, is
				// reset and reported (guide §4.3).
				c.after = func() {
					<-wrote
					w.CancelWrite(resetWriterFailed)
					id, _ := c.requestID()
					_ = c.notify(protocol.MethodStreamError, map[string]any{"requestId": id, "streamTag": ref.StreamTag, "error": injectedFailure})
				}
				return map[string]any{"content": []any{ref}}, nil
			},
			judge: func(exit int, ev *evidence) outcome {
				if exit == 0 {
					return fail("the client exited 0 after a stream reset with $/streamError")
				}
				if !reportsStreamError(ev.output) {
					return fail("the client exited %d without reporting the stream's error: neither the reset code %d nor the $/streamError message %q is in its output", exit, resetWriterFailed, injectedFailure)
				}
				return pass("client exited %d and reported the stream's error", exit)
			}},
		{Check: Check{ID: "client.invalid-ref", Level: MUST, Source: Guide, Section: "5.3", Title: "a ref/stream naming no stream fails the call (-32001) instead of hanging"},
			encodings: json1,
			tool: func(context.Context, *judgeCall) (any, error) {
				return map[string]any{"content": []any{newRef(invalidRefTag, "text/plain")}}, nil
			},
			judge: func(exit int, ev *evidence) outcome {
				if exit == 0 {
					return fail("the client exited 0 although the stream never came")
				}
				if !reportsInvalidRef(ev.output) {
					return fail("the client exited %d without reporting the bad reference: its output has neither -32001 nor an error naming stream tag %d", exit, invalidRefTag)
				}
				return pass("client exited %d and reported the bad reference", exit)
			}},
		{Check: Check{ID: "client.ping", Level: MUST, Source: Project, Section: "2", Title: "the client answers the server's ping (MCP's rule: the guide's only ping goes from client to server)"},
			encodings: json1,
			tool: func(ctx context.Context, c *judgeCall) (any, error) {
				cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				defer cancel()
				if err := c.ping(cctx); err != nil {
					c.note("ping not answered: %v", err)
					return nil, fmt.Errorf("ping not answered: %v", err)
				}
				return text("ok"), nil
			},
			judge: exitOK},
		{Check: Check{ID: "client.progress", Level: SHOULD, Source: Guide, Section: "6", Title: "progress datagrams during a call do not disturb the client, which need not ask for them"},
			encodings: json1,
			tool: func(_ context.Context, c *judgeCall) (any, error) {
				if _, err := c.requestID(); err != nil {
					c.js.ev.set("no datagram id") // client.ids judges the id
					return text("ok"), nil
				}
				for i := range 3 {
					if err := c.progress(float64(i+1), 3); err != nil {
						c.note("progress %d not sent: %v", i+1, err)
					}
				}
				return text("ok"), nil
			},
			judge: func(exit int, ev *evidence) outcome {
				if ev.flags["no datagram id"] {
					return skip("the request id does not fit a datagram header")
				}
				return exitOK(exit, ev)
			}},
		{Check: Check{ID: "client.audio-log", Level: SHOULD, Source: Guide, Section: "3.3,6", Title: "audio (0x02) and log (0x03) datagrams during a call leave the client's session up, and the result arrives"},
			encodings: json1,
			tool: func(_ context.Context, c *judgeCall) (any, error) {
				if _, err := c.requestID(); err != nil {
					c.js.ev.set("no datagram id") // client.ids judges the id
					return text("ok"), nil
				}
				if c.datagramsOff() {
					c.js.ev.set("datagrams off")
					return text("ok"), nil
				}
				for i := range audioLogCount {
					// 10 ms of silence, 16 kHz 16-bit mono.
					if err := c.datagram(guideChannelAudio, map[string]any{"seq": i, "data": base64.StdEncoding.EncodeToString(make([]byte, 320))}); err != nil {
						c.note("audio datagram %d not sent: %v", i, err)
					}
					// The params of notifications/message.
					if err := c.datagram(guideChannelLog, map[string]any{"level": "info", "logger": "mcp-flow-conformance", "data": fmt.Sprintf("audio chunk %d sent", i)}); err != nil {
						c.note("log datagram %d not sent: %v", i, err)
					}
				}
				return text("ok"), nil
			},
			judge: func(exit int, ev *evidence) outcome {
				switch {
				case ev.flags["no datagram id"]:
					return skip("the request id does not fit a datagram header")
				case ev.flags["datagrams off"]:
					return skip("the client refused datagrams (datagrams: false, this project's addition)")
				case ev.teardown != "":
					return fail("after audio and log datagrams the control stream ended before the judge closed the session: %s (exit %d)", ev.teardown, exit)
				case len(ev.unsolicited) > 0:
					return fail("the client answered audio and log datagrams with errors: %v (exit %d)", ev.unsolicited, exit)
				}
				if o := exitOK(exit, ev); o.status != Pass {
					return fail("after %d audio and %d log datagrams and then the result: %s", audioLogCount, audioLogCount, o.seen)
				}
				return pass("%d audio and %d log datagrams, then the result: the client took it and exited 0, its session not torn down", audioLogCount, audioLogCount)
			}},
		{Check: Check{ID: "client.shutdown", Level: MUST, Source: Guide, Section: "7.2", Title: "after the server's $/shutdown the client takes the answer in flight, and the session ends"},
			encodings: json1, tool: shutdownTool, drain: true,
			judge: func(exit int, ev *evidence) outcome {
				if exit != 0 {
					return fail("client exited %d after the server's $/shutdown and the answer that followed it; %v", exit, ev.notes)
				}
				if !ev.ended {
					return fail("the session did not end after the drain")
				}
				return pass("the client took the answer and the session ended")
			}},
		{Check: Check{ID: "client.shutdown-fin", Level: MUST, Source: Project, Section: "7.2", Title: "after the server's $/shutdown the client finishes its direction of the control stream (FIN)"},
			encodings: json1, tool: shutdownTool, drain: true,
			judge: func(exit int, ev *evidence) outcome {
				if !ev.flags["fin after shutdown"] {
					return fail("no FIN on the control stream within %v of $/shutdown (exit %d)", ev.finWait, exit)
				}
				return pass("FIN after $/shutdown")
			}},
	}
}

// audioLogCount is how many audio and how many log datagrams
// client.audio-log sends before its result.
const audioLogCount = 3

type errReader struct{}

func (errReader) Read([]byte) (int, error) {
	return 0, errors.New("conformance: injected stream failure")
}

// ClientChecks lists the client-mode checks.
func ClientChecks() []Check {
	var out []Check
	for _, s := range clientScenarios() {
		out = append(out, s.Check)
	}
	return out
}

// RunClient runs every client scenario against the client command.
func RunClient(ctx context.Context, ct ClientTarget, o Options) []Result {
	o = o.withDefaults(20 * time.Second)
	var out []Result
	for _, sc := range clientScenarios() {
		if o.Only != nil && !o.Only[sc.ID] {
			continue
		}
		start := time.Now()
		oc := runScenario(ctx, ct, sc, o.CheckTimeout, o.FINWait)
		out = o.report(out, Result{ID: sc.ID, Level: sc.Level, Source: sc.Source, Section: sc.Section, Title: sc.Title, Status: oc.status, Seen: oc.seen, Duration: time.Since(start)})
	}
	return out
}

func runScenario(ctx context.Context, ct ClientTarget, sc scenario, timeout, finWait time.Duration) outcome {
	ev := &evidence{finWait: finWait}
	j, err := newJudge(ct.TLS, sc, ev, finWait)
	if err != nil {
		return fail("runner: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := append(append([]string(nil), ct.Command[1:]...), "call", "scenario")
	cmd := exec.CommandContext(cctx, ct.Command[0], args...)
	cmd.Env = append(append(os.Environ(), ct.Env...), "MCP_FLOW_URL="+j.url, "MCP_FLOW_CERT_HASH="+ct.CertHash)
	var stdout, stderr clientOutput
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err = cmd.Run()
	exit := cmd.ProcessState.ExitCode()
	ev.output = stdout.String() + "\n" + stderr.String()
	timedOut := cctx.Err() != nil
	if sc.drain && !timedOut && ev.wasCalled() {
		// The drain ends the session within finWait; the rest is slack
		// for a loaded machine. A client that never called the tool started
		// no drain, and its session (if any) ends with its process: the
		// judge does not wait on it.
		j.awaitEnd(finWait + 5*time.Second)
	}
	j.close()
	var o outcome
	switch {
	case timedOut:
		o = fail("the client did not finish within %v", timeout)
	case err != nil && exit < 0:
		o = fail("cannot run the client: %v", err)
	case !ev.called:
		// Every check needs evidence from the client: one that never
		// connected, or never called the tool, passes none, whatever its
		// exit status.
		o = fail("the client never called the tool %q (exit %d); judge saw: %v", "scenario", exit, ev.notes)
	default:
		o = sc.judge(exit, ev)
	}
	if e := stderr.String(); e != "" {
		o.seen += "; client stderr: " + e
	}
	return o
}
