package conformance

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/testtools"
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

// scenario is one client-mode check: the server's behaviour and what it
// concludes.
type scenario struct {
	Check
	encodings []codec.Name
	// tool is the behaviour of the tool "scenario"; note records findings.
	tool func(ctx context.Context, req *flow.Request, note func(string, ...any)) (any, error)
	// judge turns the client's exit and the notes into an outcome.
	judge func(exit int, notes []string, s *flow.Session) outcome
}

func text(s string) map[string]any {
	return map[string]any{"content": []any{map[string]string{"type": "text", "text": s}}}
}

func exitOK(exit int, notes []string, _ *flow.Session) outcome {
	if exit != 0 {
		return fail("client exited %d; server saw: %v", exit, notes)
	}
	return pass("client exited 0")
}

func clientScenarios() []scenario {
	return []scenario{
		{Check: Check{ID: "client.basic", Level: MUST, Source: Guide, Section: "2,4", Title: "the client initializes in JSON and calls a tool"},
			encodings: []codec.Name{codec.JSON},
			tool: func(_ context.Context, req *flow.Request, note func(string, ...any)) (any, error) {
				p := req.Session.InitializeParams()
				if p.Transport == nil || p.Transport.Type != flow.TransportType {
					note("initialize had no mcp-flow transport object")
				}
				return text("ok"), nil
			},
			judge: func(exit int, notes []string, s *flow.Session) outcome {
				if len(notes) > 0 {
					return fail("%v", notes)
				}
				return exitOK(exit, notes, s)
			}},
		{Check: Check{ID: "client.ids", Level: MUST, Source: Guide, Section: "3.2", Title: "the client's request ids fit 32 bits"},
			encodings: []codec.Name{codec.JSON},
			tool: func(_ context.Context, req *flow.Request, note func(string, ...any)) (any, error) {
				if _, ok := req.ID.Uint32(); !ok {
					note("request id %s is not an integer in [0, 2^32-1]", req.ID)
				}
				return text("ok"), nil
			},
			judge: func(exit int, notes []string, s *flow.Session) outcome {
				if len(notes) > 0 {
					return fail("%v", notes)
				}
				return exitOK(exit, notes, s)
			}},
		{Check: Check{ID: "client.cbor", Level: MUST, Source: Guide, Section: "4.2", Title: "after choosing cbor the client speaks CBOR"},
			encodings: []codec.Name{codec.CBOR, codec.JSON},
			tool: func(_ context.Context, req *flow.Request, note func(string, ...any)) (any, error) {
				note("encoding %s", req.Session.Encoding())
				return text("ok"), nil
			},
			judge: func(exit int, notes []string, s *flow.Session) outcome {
				if s != nil && s.Encoding() != codec.CBOR {
					return skip("the client did not offer cbor")
				}
				return exitOK(exit, notes, s)
			}},
		{Check: Check{ID: "client.stream", Level: MUST, Source: Guide, Section: "5", Title: "the client reads an execution stream to its end"},
			encodings: []codec.Name{codec.JSON},
			tool: func(_ context.Context, req *flow.Request, note func(string, ...any)) (any, error) {
				w, err := req.OpenStream("application/octet-stream")
				if err != nil {
					return nil, err
				}
				go func() {
					// 8 MiB: more than flow control lets through unread.
					n, err := io.Copy(w, testtools.Generate(8<<20))
					if err != nil {
						note("stream write stopped after %d bytes: %v", n, err)
						return
					}
					note("stream complete")
					_ = w.Close()
				}()
				return map[string]any{"content": []any{w.Ref()}}, nil
			},
			judge: func(exit int, notes []string, s *flow.Session) outcome {
				if !slices.Contains(notes, "stream complete") {
					return fail("the stream was not read to its end: %v (exit %d)", notes, exit)
				}
				return exitOK(exit, notes, s)
			}},
		{Check: Check{ID: "client.stream-error", Level: MUST, Source: Guide, Section: "5.4", Title: "the client does not take a failed stream for a whole one"},
			encodings: []codec.Name{codec.JSON},
			tool: func(_ context.Context, req *flow.Request, _ func(string, ...any)) (any, error) {
				ref, err := req.StreamFrom(io.MultiReader(testtools.Generate(100_000), errReader{}), "application/octet-stream")
				if err != nil {
					return nil, err
				}
				return map[string]any{"content": []any{ref}}, nil
			},
			judge: func(exit int, notes []string, _ *flow.Session) outcome {
				if exit == 0 {
					return fail("the client exited 0 after a stream reset with $/streamError")
				}
				return pass("client exited %d", exit)
			}},
		{Check: Check{ID: "client.invalid-ref", Level: MUST, Source: Guide, Section: "5.3", Title: "a ref/stream naming no stream fails the call (-32001) instead of hanging"},
			encodings: []codec.Name{codec.JSON},
			tool: func(_ context.Context, _ *flow.Request, _ func(string, ...any)) (any, error) {
				return map[string]any{"content": []any{flow.StreamRef{Type: flow.ContentTypeRef, StreamTag: 9, MimeType: "text/plain"}}}, nil
			},
			judge: func(exit int, _ []string, _ *flow.Session) outcome {
				if exit == 0 {
					return fail("the client exited 0 although the stream never came")
				}
				return pass("client exited %d", exit)
			}},
		{Check: Check{ID: "client.ping", Level: MUST, Source: Guide, Section: "2", Title: "the client answers the server's ping"},
			encodings: []codec.Name{codec.JSON},
			tool: func(ctx context.Context, req *flow.Request, note func(string, ...any)) (any, error) {
				cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				defer cancel()
				if err := req.Session.Ping(cctx); err != nil {
					note("ping not answered: %v", err)
					return nil, fmt.Errorf("ping not answered: %v", err)
				}
				return text("ok"), nil
			},
			judge: func(exit int, notes []string, s *flow.Session) outcome {
				if len(notes) > 0 {
					return fail("%v", notes)
				}
				return exitOK(exit, notes, s)
			}},
		{Check: Check{ID: "client.shutdown", Level: MUST, Source: Guide, Section: "7.2", Title: "after $/shutdown the client finishes its side and the session closes cleanly"},
			encodings: []codec.Name{codec.JSON},
			tool: func(ctx context.Context, req *flow.Request, _ func(string, ...any)) (any, error) {
				s := req.Session
				go s.Shutdown(context.Background(), "conformance: server shutting down")
				// The answer comes after $/shutdown, which is sent by the
				// time Draining closes: this session has no calls of its own.
				select {
				case <-s.Draining():
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				}
				return text("ok"), nil
			},
			judge: func(exit int, notes []string, s *flow.Session) outcome {
				if exit != 0 {
					return fail("client exited %d: the answer after $/shutdown was lost", exit)
				}
				if s == nil {
					return fail("no session")
				}
				select {
				case <-s.Done():
				case <-time.After(3 * time.Second):
					return fail("the session did not close after the drain")
				}
				var se *flow.SessionError
				if !errors.As(s.Err(), &se) || se.Code != flow.CloseOK {
					return fail("session ended with %v, not a clean drain", s.Err())
				}
				return pass("clean close")
			}},
	}
}

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
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 20 * time.Second
	}
	var out []Result
	for _, sc := range clientScenarios() {
		if o.Only != nil && !o.Only[sc.ID] {
			continue
		}
		start := time.Now()
		oc := runScenario(ctx, ct, sc, o.CheckTimeout)
		out = o.report(out, Result{ID: sc.ID, Level: sc.Level, Source: sc.Source, Section: sc.Section, Title: sc.Title, Status: oc.status, Seen: oc.seen, Duration: time.Since(start)})
	}
	return out
}

func runScenario(ctx context.Context, ct ClientTarget, sc scenario, timeout time.Duration) outcome {
	var mu sync.Mutex
	var notes []string
	var called *flow.Session // the session on which the client called the tool "scenario"
	note := func(f string, a ...any) {
		mu.Lock()
		notes = append(notes, fmt.Sprintf(f, a...))
		mu.Unlock()
	}
	srv, err := flow.NewServer(flow.ServerConfig{
		Addr:      "127.0.0.1:0",
		TLSConfig: ct.TLS,
		Encodings: sc.encodings,
		Handler: flow.Mux{
			"tools/list": flow.HandlerFunc(func(context.Context, *flow.Request) (any, error) {
				return json.RawMessage(`{"tools":[{"name":"scenario","inputSchema":{"type":"object"}}]}`), nil
			}),
			"tools/call": flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
				mu.Lock()
				if called == nil {
					called = req.Session
				}
				mu.Unlock()
				return sc.tool(ctx, req, note)
			}),
		},
		Capabilities: json.RawMessage(`{"tools":{}}`),
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return fail("runner: %v", err)
	}
	if err := srv.Listen(); err != nil {
		return fail("runner: %v", err)
	}
	go srv.Serve()
	defer srv.Close()

	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := append(append([]string(nil), ct.Command[1:]...), "call", "scenario")
	cmd := exec.CommandContext(cctx, ct.Command[0], args...)
	cmd.Env = append(append(os.Environ(), ct.Env...), "MCP_FLOW_URL="+srv.URL(), "MCP_FLOW_CERT_HASH="+ct.CertHash)
	var stderr bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	err = cmd.Run()
	exit := cmd.ProcessState.ExitCode()
	if cctx.Err() != nil {
		return fail("the client did not finish within %v", timeout)
	}
	if err != nil && exit < 0 {
		return fail("cannot run the client: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var o outcome
	if called == nil {
		// Every check needs evidence from the client: one that never
		// connected, or never called the tool, passes none, whatever its
		// exit status.
		o = fail("the client never called the tool %q (exit %d)", "scenario", exit)
	} else {
		o = sc.judge(exit, notes, called)
	}
	if stderr.Len() > 0 {
		o.seen += "; client stderr: " + stderr.String()
	}
	return o
}
