package conformance

// This file is long because it is the catalogue of server-mode checks: the
// ServerChecks table, then one function per check of docs/conformance.md, in
// the table's order, so that the table, the document and the code read alike.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// Level is how binding a rule is (RFC 2119).
type Level string

// The levels.
const (
	MUST   Level = "MUST"
	SHOULD Level = "SHOULD"
)

// Source is where a check's rule comes from (docs/conformance.md).
type Source string

// The sources. A peer that implements the guide and the published schema
// alone fails no Guide check; Project checks grade this repository's
// additions (the datagrams field, a FIN after $/shutdown, -32800...).
const (
	Guide   Source = "guide"
	Project Source = "project"
)

// Check is one rule of docs/spec.md, tested against a server.
type Check struct {
	ID      string // stable, e.g. "negotiate.cbor"
	Level   Level
	Source  Source
	Section string // of docs/spec.md
	Title   string
	run     func(ctx context.Context, t Target) outcome
	waits   waits
}

// waits is what a check waits for, which sets how long silence takes to be
// a verdict.
type waits bool

// The two waits. A server owes an answer to a request, so a check waiting
// for one waits up to Options.CheckTimeout. A null-id error about a bad
// frame, an injected stream or an unwanted datagram answers no request: a
// server that ignores what it was sent says nothing at all, so such a check
// takes silence past Options.AnswerWait for its verdict, and runs beside
// the others on its own session (RunServer), so that a silent server costs
// the run one wait, not one per check.
const (
	forReply  waits = false
	forNotice waits = true
)

type outcome struct {
	status Status
	seen   string
}

func pass(format string, a ...any) outcome { return outcome{Pass, fmt.Sprintf(format, a...)} }
func fail(format string, a ...any) outcome { return outcome{Fail, fmt.Sprintf(format, a...)} }
func skip(format string, a ...any) outcome { return outcome{Skip, fmt.Sprintf(format, a...)} }

// expectCode checks that r is an error with code and, unless id is absent,
// that id.
func expectCode(r *jsonrpc.Response, err error, code jsonrpc.Code) outcome {
	switch {
	case err != nil:
		return fail("no answer: %v", err)
	case r.Error == nil:
		return fail("answered with a result %s, want error %d", clip(string(r.Result)), code)
	case r.Error.Code != code:
		return fail("error %d %q, want %d", r.Error.Code, r.Error.Message, code)
	}
	return pass("error %d %q", r.Error.Code, r.Error.Message)
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// withProbe runs f on a READY session with the given encodings.
func withProbe(ctx context.Context, t Target, encodings []string, w wish, f func(*probe) outcome) outcome {
	p, err := ready(ctx, t, encodings, w)
	if err != nil {
		return fail("%v", err)
	}
	defer p.close()
	return f(p)
}

// alive checks that the session still answers ping after something bad.
func alive(p *probe, o outcome) outcome {
	if o.status != Pass {
		return o
	}
	r, _, err := p.call(protocol.MethodPing, nil, nil)
	if err != nil || r.Error != nil {
		return fail("%s; then the session stopped answering ping (%v)", o.seen, err)
	}
	return pass("%s; session carries on", o.seen)
}

// ServerChecks returns every check of server mode, in order.
func ServerChecks() []Check {
	return []Check{
		{"init.json", MUST, Guide, "4.1", "initialize is answered in JSON with the schema's transport capabilities (type, version, encoding, maxConcurrentStreams, datagramsSupported)", checkInitJSON, forReply},
		{"init.max-frame-size", SHOULD, Project, "4.1", "the transport capabilities announce maxFrameSize (this project's addition)", checkInitMaxFrame, forReply},
		{"negotiate.none", MUST, Guide, "4.1", "a client naming no encodings gets json", checkNegotiateNone, forReply},
		{"negotiate.cbor", MUST, Guide, "4.2", "after choosing cbor both sides speak CBOR", negotiate(codec.CBOR), forReply},
		{"negotiate.protobuf", SHOULD, Project, "4.2", "after choosing protobuf both sides speak protobuf", negotiate(codec.Protobuf), forReply},
		{"negotiate.unknown-type", MUST, Guide, "4.1", "an unknown transport type is -32600", checkUnknownType, forReply},
		{"state.before-initialize", MUST, Project, "2", "a request before initialize is answered -32600", checkBeforeInit, forReply},
		{"state.ping-before-initialize", SHOULD, Project, "2", "ping before initialize is answered", checkPingBeforeInit, forReply},
		{"frame.zero-length", MUST, Project, "3.1", "a zero-length frame is -32600 and the session carries on", checkZeroLength, forNotice},
		{"frame.too-large", MUST, Project, "3.1", "a 4 GiB length is refused without hanging (-32600 or a closed session)", checkTooLarge, forNotice},
		{"frame.parse-error", MUST, Guide, "4.3", "an undecodable frame is -32700 with a null id", checkParseError, forNotice},
		{"encoding.mismatch", MUST, Guide, "4.3", "a frame in another encoding is -32003", checkMismatch, forNotice},
		{"batch.empty", SHOULD, Project, "1", "an empty batch gets one -32600", checkEmptyBatch, forNotice},
		{"stream.header", MUST, Guide, "3.2/5.1", "an execution stream starts with the request id and tag, big-endian, and carries the payload", checkStreamHeader, forReply},
		{"stream.multiple", SHOULD, Guide, "5.2", "one result can name several streams with distinct tags", checkStreamMultiple, forReply},
		{"stream.error", MUST, Guide, "5.4", "a stream failing mid-transfer is reported with $/streamError naming its request and tag", checkStreamError(false), forNotice},
		{"stream.error-reset", MUST, Project, "5.4", "a stream failing mid-transfer is reset, not finished: a truncated payload never looks complete", checkStreamError(true), forNotice},
		{"stream.injection", MUST, Guide, "5.3", "a client-opened stream naming no request in flight is not taken: -32002, or refused (not applicable to a server that never reads client streams)", checkInjection(false), forNotice},
		{"stream.injection-report", MUST, Project, "5.3", "a client-opened stream naming no request in flight is answered -32002 and the session carries on", checkInjection(true), forNotice},
		{"datagram.progress", SHOULD, Guide, "6", "progress arrives as datagrams with channel 1, flags 0 and the request id", checkProgressDatagram, forReply},
		{"datagram.fallback", MUST, Project, "6", "without datagrams, progress arrives as notifications/progress", checkProgressFallback, forReply},
		{"datagram.unsupported", MUST, Guide, "6", "a server that announced datagramsSupported: false answers a datagram with -32004", checkDatagramUnsupported(false), forNotice},
		{"datagram.opt-out", MUST, Project, "6", "a datagram on a session whose client said datagrams: false is -32004", checkDatagramUnsupported(true), forNotice},
		{"cancel", MUST, Guide, "7.1", "$/cancel stops the request: it is answered with an error", checkCancel(false), forReply},
		{"cancel.code", MUST, Project, "7.1", "a cancelled request is answered -32800 (the guide's -32000 is the stream limit's)", checkCancel(true), forReply},
		{"cancel.late", MUST, Guide, "7.1", "a $/cancel for a finished request leaves the session working", checkLateCancel, forReply},
		{"shutdown.drain", MUST, Guide, "7.2", "$/shutdown lets the request in flight finish, then the session ends", checkShutdown(false), forReply},
		{"shutdown.fin", MUST, Project, "7.2", "after the drain the server finishes the control stream (FIN)", checkShutdown(true), forReply},
		{"shutdown.refuse-new", MUST, Project, "7.2", "after $/shutdown a new request is refused with an error", checkShutdownRefuses, forReply},
		{"origin", MUST, Guide, "9", "a CONNECT from a disallowed Origin is refused with an HTTP 4xx", checkOrigin(false), forReply},
		{"origin.403", MUST, Project, "9", "a CONNECT from a disallowed Origin gets HTTP 403", checkOrigin(true), forReply},
		{"tls.13", MUST, Guide, "9", "an MCP-Flow session runs over TLS 1.3", checkTLS13, forReply},
		{"method.unknown", MUST, Guide, "8.1", "an unknown method is -32601", checkUnknownMethod, forReply},
		{"limit.streams", MUST, Guide, "5.3", "more execution streams than maxConcurrentStreams is -32000", checkStreamLimit, forReply},
	}
}

func checkInitJSON(ctx context.Context, t Target) outcome {
	tr, o := serverTransport(ctx, t)
	if tr == nil {
		return o
	}
	// What the published v0.1 schema's ServerTransportCapabilities requires.
	var missing []string
	if tr.Type != protocol.TransportType {
		missing = append(missing, fmt.Sprintf("type %q", tr.Type))
	}
	if tr.Version == "" {
		missing = append(missing, "version")
	}
	if tr.Encoding != codec.JSON {
		missing = append(missing, fmt.Sprintf("encoding %q", tr.Encoding))
	}
	if tr.MaxConcurrentStreams <= 0 {
		missing = append(missing, "maxConcurrentStreams")
	}
	if tr.DatagramsSupported == nil {
		missing = append(missing, "datagramsSupported")
	}
	if len(missing) > 0 {
		return fail("transport object lacks or has wrong: %s", strings.Join(missing, ", "))
	}
	b, _ := json.Marshal(tr)
	return pass("transport %s", b)
}

func checkInitMaxFrame(ctx context.Context, t Target) outcome {
	tr, o := serverTransport(ctx, t)
	if tr == nil {
		return o
	}
	if tr.MaxFrameSize == 0 {
		b, _ := json.Marshal(tr)
		return fail("no maxFrameSize in %s", b)
	}
	return pass("maxFrameSize %d", tr.MaxFrameSize)
}

// serverTransport initializes a session in JSON and returns the server's
// transport object, or nil and the failed outcome.
func serverTransport(ctx context.Context, t Target) (*transportSeen, outcome) {
	p, _, err := dial(ctx, t, nil)
	if err != nil {
		return nil, fail("dial: %v", err)
	}
	defer p.close()
	r, err := p.initialize(map[string]any{"type": protocol.TransportType, "version": protocol.Version, "encodings": []string{protocol.EncodingJSON}})
	if err != nil {
		return nil, fail("%v", err)
	}
	if r.Error != nil {
		return nil, fail("initialize failed: %d %s", r.Error.Code, r.Error.Message)
	}
	tr := p.init.Transport
	return &tr, outcome{}
}

func checkNegotiateNone(ctx context.Context, t Target) outcome {
	p, _, err := dial(ctx, t, nil)
	if err != nil {
		return fail("dial: %v", err)
	}
	defer p.close()
	r, err := p.initialize(map[string]any{"type": protocol.TransportType, "version": protocol.Version})
	if err != nil || r.Error != nil {
		return fail("initialize: %v %v", err, r)
	}
	if p.init.Transport.Encoding != codec.JSON {
		return fail("encoding %q", p.init.Transport.Encoding)
	}
	return alive(p, pass("encoding json"))
}

func negotiate(enc codec.Name) func(context.Context, Target) outcome {
	return func(ctx context.Context, t Target) outcome {
		return withProbe(ctx, t, []string{string(enc), protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
			if got := p.init.Transport.Encoding; got != enc {
				return skip("server chose %q (it may not support %s)", got, enc)
			}
			r, _, err := p.call(protocol.MethodPing, nil, nil)
			if err != nil {
				return fail("ping in %s: %v", enc, err)
			}
			if r.Error != nil {
				return fail("ping in %s answered %d %s", enc, r.Error.Code, r.Error.Message)
			}
			return pass("ping answered in %s", enc)
		})
	}
}

func checkUnknownType(ctx context.Context, t Target) outcome {
	p, _, err := dial(ctx, t, nil)
	if err != nil {
		return fail("dial: %v", err)
	}
	defer p.close()
	r, err := p.initialize(map[string]any{"type": "websocket"})
	return expectCode(r, err, jsonrpc.CodeInvalidRequest)
}

func checkBeforeInit(ctx context.Context, t Target) outcome {
	p, _, err := dial(ctx, t, nil)
	if err != nil {
		return fail("dial: %v", err)
	}
	defer p.close()
	r, _, err := p.call("tools/list", nil, nil)
	return expectCode(r, err, jsonrpc.CodeInvalidRequest)
}

func checkPingBeforeInit(ctx context.Context, t Target) outcome {
	p, _, err := dial(ctx, t, nil)
	if err != nil {
		return fail("dial: %v", err)
	}
	defer p.close()
	r, _, err := p.call(protocol.MethodPing, nil, nil)
	if err != nil || r.Error != nil {
		return fail("ping: %v %v", err, r)
	}
	return pass("ping answered %s", r.Result)
}

func checkZeroLength(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		_ = p.writeRaw([]byte{0, 0, 0, 0})
		e, err := p.notice()
		if err != nil {
			return fail("no null-id error: %v", err)
		}
		if e.Code != jsonrpc.CodeInvalidRequest {
			return fail("error %d %q, want -32600", e.Code, e.Message)
		}
		return alive(p, pass("error %d", e.Code))
	})
}

func checkTooLarge(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		_ = p.writeRaw([]byte{0xFF, 0xFF, 0xFF, 0xFF, '{'})
		e, err := p.notice()
		switch {
		case err == nil && e.Code == jsonrpc.CodeInvalidRequest:
			return pass("error %d %q", e.Code, e.Message)
		case err == nil:
			return fail("error %d %q, want -32600", e.Code, e.Message)
		case errors.Is(err, io.EOF) || isClosed(err):
			return pass("session closed: %v", err)
		}
		return fail("neither an error nor a close: %v", err)
	})
}

// isClosed tells an error that ends the session: its close, a stream's
// reset, a cut, or the peer's close of the whole QUIC connection (a server
// of one session per connection, Deno's, ends a session so; its close can
// overtake the -32600 it wrote just before, as it did once under load).
func isClosed(err error) bool {
	var se *webtransport.SessionError
	var st *webtransport.StreamError
	var ae *quic.ApplicationError
	return errors.As(err, &se) || errors.As(err, &st) || (errors.As(err, &ae) && ae.Remote) ||
		errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "closed")
}

func checkParseError(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		_ = p.sendJSON(`{"jsonrpc":"2.0","id":5,"method":`)
		e, err := p.notice()
		if err != nil {
			return fail("no null-id error: %v", err)
		}
		if e.Code != jsonrpc.CodeParseError {
			return fail("error %d, want -32700", e.Code)
		}
		return alive(p, pass("error %d", e.Code))
	})
}

func checkMismatch(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		b, _ := codec.Default(codec.CBOR).Append(nil, &jsonrpc.Request{ID: jsonrpc.Int64ID(77), Method: protocol.MethodPing})
		_ = p.writeRaw(wire.AppendFrame(nil, b))
		// The server may not read the frame's id (it does not decode as
		// JSON): what comes may answer no request, hence the short wait.
		var r *jsonrpc.Response
		err := p.within(func() error {
			for r == nil {
				msgs, _, err := p.read()
				if err != nil {
					return err
				}
				for _, m := range msgs {
					if m, ok := m.(*jsonrpc.Response); ok {
						r = m
					}
				}
			}
			return nil
		})
		switch {
		case err != nil:
			return fail("no answer: %v", err)
		case r.Error == nil:
			return fail("a CBOR ping was answered with a result on a JSON session")
		case r.Error.Code != jsonrpc.CodeEncodingMismatch:
			return fail("error %d %q, want -32003", r.Error.Code, r.Error.Message)
		}
		return alive(p, pass("error %d with id %s", r.Error.Code, r.ID))
	})
}

func checkEmptyBatch(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		_ = p.sendJSON(`[]`)
		var raw []byte
		err := p.within(func() (err error) {
			_, raw, err = p.read()
			return err
		})
		if err != nil {
			return fail("no answer: %v", err)
		}
		var one struct {
			ID    json.RawMessage
			Error *jsonrpc.Error
		}
		if json.Unmarshal(raw, &one) != nil || one.Error == nil || one.Error.Code != jsonrpc.CodeInvalidRequest {
			return fail("answered %s, want one -32600 response (not an array)", clip(string(raw)))
		}
		return pass("one -32600 response")
	})
}

// toolCall calls a tool of mcp-flow-server's test set; skip when the server
// does not offer it.
func toolCall(p *probe, name string, args any, note func(*jsonrpc.Request)) (*jsonrpc.Response, uint32, *outcome) {
	if o := p.needTool(name); o != nil {
		return nil, 0, o
	}
	r, id, err := p.call("tools/call", map[string]any{"name": name, "arguments": args}, note)
	if err != nil {
		o := fail("tools/call %s: %v", name, err)
		return nil, 0, &o
	}
	n, _ := id.Uint32()
	return r, n, nil
}

func checkStreamHeader(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		const n = 100_000
		r, id, o := toolCall(p, "generate", map[string]any{"bytes": n}, nil)
		if o != nil {
			return *o
		}
		rf := refs(r)
		if r.Error != nil || len(rf) != 1 {
			return fail("result %s: want one ref/stream block", clip(string(r.Result)))
		}
		rs, h, err := p.acceptStream()
		if err != nil {
			return fail("no execution stream: %v", err)
		}
		if h.RequestID != id || h.StreamTag != rf[0].StreamTag {
			return fail("header names request %d tag %d, want request %d tag %d", h.RequestID, h.StreamTag, id, rf[0].StreamTag)
		}
		got, err := io.Copy(io.Discard, rs)
		if err != nil || got != n {
			return fail("payload %d of %d bytes: %v", got, n, err)
		}
		return pass("header (%d, %d), %d bytes", h.RequestID, h.StreamTag, got)
	})
}

func checkStreamMultiple(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		r, id, o := toolCall(p, "generate", map[string]any{"bytes": 1000, "streams": 3}, nil)
		if o != nil {
			return *o
		}
		rf := refs(r)
		tags := map[uint32]bool{}
		for _, x := range rf {
			tags[x.StreamTag] = true
		}
		if len(rf) != 3 || len(tags) != 3 {
			return fail("%d refs with %d distinct tags, want 3", len(rf), len(tags))
		}
		// The header's byte order is stream.header's business; here only
		// that three streams come, with three different headers.
		seen := map[[2]uint32]bool{}
		for range 3 {
			rs, h, err := p.acceptStream()
			if err != nil {
				return fail("%d of 3 streams arrived: %v", len(seen), err)
			}
			seen[[2]uint32{h.RequestID, h.StreamTag}] = true
			_, _ = io.Copy(io.Discard, rs)
		}
		if len(seen) != 3 {
			return fail("3 streams with %d distinct headers", len(seen))
		}
		return pass("3 streams, distinct tags (request %d)", id)
	})
}

// checkStreamError calls fail_midstream, whose stream fails after some
// bytes. The guide (§4.3) reports that with $/streamError; with reset, the
// stream itself must end with a reset, not a FIN (this project's rule, spec
// §5.4: the guide does not say how the stream ends).
func checkStreamError(reset bool) func(context.Context, Target) outcome {
	return func(ctx context.Context, t Target) outcome {
		return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
			var note *jsonrpc.Request
			keep := func(n *jsonrpc.Request) {
				if n.Method == protocol.MethodStreamError && note == nil {
					note = n
				}
			}
			r, id, o := toolCall(p, "fail_midstream", map[string]any{"bytes": 50_000}, keep)
			if o != nil {
				return *o
			}
			rf := refs(r)
			if len(rf) != 1 {
				return fail("result %s: want one ref/stream block", clip(string(r.Result)))
			}
			var se *webtransport.StreamError
			rs, _, err := p.acceptStream()
			switch {
			case errors.As(err, &se):
				// Reset before its header could be read: QUIC may discard
				// the unread bytes of a reset stream (RFC 9000 §3.2), so
				// this too is the reset the rule asks for.
			case err != nil:
				return fail("no execution stream: %v", err)
			default:
				_, err = io.Copy(io.Discard, rs)
			}
			ended := "a FIN"
			if errors.As(err, &se) {
				ended = fmt.Sprintf("a reset (code %d)", se.ErrorCode)
			} else if err != nil {
				ended = err.Error()
			}
			if reset {
				if se == nil {
					return fail("the failed stream ended with %s, not a reset: a truncated payload looks complete", ended)
				}
				return pass("the failed stream ended with %s", ended)
			}
			// $/streamError is a notification: it answers no request.
			err = p.within(func() error {
				for note == nil {
					msgs, _, err := p.read()
					if err != nil {
						return err
					}
					for _, m := range msgs {
						if n, ok := m.(*jsonrpc.Request); ok {
							keep(n)
						}
					}
				}
				return nil
			})
			if err != nil {
				return fail("the stream ended with %s, and no $/streamError came: %v", ended, err)
			}
			var sp struct {
				RequestID *uint32 `json:"requestId"`
				StreamTag *uint32 `json:"streamTag"`
				Error     *string `json:"error"`
			}
			switch {
			case json.Unmarshal(note.Params, &sp) != nil || sp.RequestID == nil || sp.StreamTag == nil || sp.Error == nil:
				return fail("$/streamError params %s lack requestId, streamTag or error (all three required by the schema)", note.Params)
			case *sp.RequestID != id || *sp.StreamTag != rf[0].StreamTag:
				return fail("$/streamError names request %d tag %d, want request %d tag %d", *sp.RequestID, *sp.StreamTag, id, rf[0].StreamTag)
			}
			return pass("the stream ended with %s; $/streamError %q", ended, *sp.Error)
		})
	}
}

// injectionBytes is what checkInjection writes after the header: more than
// any stream's initial flow-control window (quic-go's is 512 KiB), so that
// a server that never reads the stream holds the write back.
const injectionBytes = 4 << 20

// checkInjection opens a unidirectional stream whose header names no request
// in flight. The guide (§4.2) gives -32002 for it, but only servers open
// streams in the guide: a server that refuses client-opened streams, or never
// reads them, cannot be injected. With report, this project's rule: -32002
// with a null id, and the session carries on.
//
// What the server did with the stream shows in the write: a refusal is a
// STOP_SENDING; a server that never reads it stalls the write at its
// flow-control window, long before the wait ends; one that reads it lets the
// bytes move until they are all taken or the wait ends.
func checkInjection(report bool) func(context.Context, Target) outcome {
	return func(ctx context.Context, t Target) outcome {
		return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
			st, err := p.sess.OpenUniStreamSync(ctx)
			if err != nil {
				return fail("open stream: %v", err)
			}
			type wrote struct {
				n     int
				err   error
				still time.Duration // since the last byte went (a stall)
			}
			done := make(chan wrote, 1)
			_ = st.SetWriteDeadline(time.Now().Add(answerWait(ctx)))
			go func() {
				n, err := st.Write(wire.StreamHeader{RequestID: 4242, StreamTag: 1}.Append(nil))
				last, chunk := time.Now(), make([]byte, 16<<10)
				for err == nil && n < injectionBytes {
					var k int
					k, err = st.Write(chunk)
					if n += k; k > 0 {
						last = time.Now()
					}
				}
				if err == nil {
					err = st.Close()
				}
				done <- wrote{n, err, time.Since(last)}
			}()
			e, nerr := p.notice()
			if nerr == nil {
				if e.Code != jsonrpc.CodeStreamInjection {
					return fail("error %d %q, want -32002", e.Code, e.Message)
				}
				return alive(p, pass("error %d", e.Code))
			}
			w := <-done
			var se *webtransport.StreamError
			switch {
			case report:
				return fail("no -32002 within %v: %v (the stream: %d bytes written, %v)", answerWait(ctx), nerr, w.n, w.err)
			case errors.As(w.err, &se):
				return pass("refused (STOP_SENDING, code %d) without -32002 after %d bytes: a server that takes no client streams cannot be injected", se.ErrorCode, w.n)
			case errors.Is(w.err, os.ErrDeadlineExceeded) && w.still >= answerWait(ctx)/4:
				return skip("not applicable: the server never read the client-opened stream (flow control held it at %d bytes for %v) and said nothing; in the guide only servers open execution streams", w.n, w.still.Round(time.Millisecond))
			case errors.Is(w.err, os.ErrDeadlineExceeded):
				return fail("the server was still reading a stream naming no request in flight (%d bytes taken) and said nothing (%v)", w.n, nerr)
			case w.err == nil:
				return fail("the server took all %d bytes of a stream naming no request in flight and said nothing (%v)", w.n, nerr)
			case isSessionClosed(w.err):
				return pass("refused by closing the session: %v", w.err)
			}
			return fail("no -32002 (%v); the stream: %d bytes written, %v", nerr, w.n, w.err)
		})
	}
}

func checkProgressDatagram(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		if ds := p.init.Transport.DatagramsSupported; ds == nil || !*ds {
			return skip("the server does not support datagrams")
		}
		got := make(chan wire.DatagramHeader, 64)
		go func() {
			for {
				b, err := p.sess.ReceiveDatagram(ctx)
				if err != nil {
					return
				}
				if h, _, err := wire.ParseDatagram(b); err == nil {
					got <- h
				} else if len(b) >= 6 {
					got <- wire.DatagramHeader{Channel: wire.Channel(b[0]), Flags: b[1]}
				}
			}
		}()
		if o := p.needTool("slow"); o != nil {
			return *o
		}
		id := jsonrpc.Int64ID(int64(p.nextID))
		p.nextID++
		req, _ := jsonrpc.NewRequest(id, "tools/call", map[string]any{"name": "slow", "arguments": map[string]int{"steps": 5, "delayMs": 10},
			"_meta": map[string]any{"progressToken": 7}})
		if err := p.send(req); err != nil {
			return fail("%v", err)
		}
		if _, err := p.response(id, nil); err != nil {
			return fail("%v", err)
		}
		select {
		case h := <-got:
			want, _ := id.Uint32()
			if h.Channel != wire.ChannelProgress || h.Flags != 0 || h.RequestID != want {
				return fail("datagram header %+v, want channel 1, flags 0, request %d", h, want)
			}
			return pass("progress datagram %+v", h)
		case <-time.After(time.Second):
			return fail("no progress datagram")
		}
	})
}

func checkProgressFallback(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, noDatagrams, func(p *probe) outcome {
		if o := p.needTool("slow"); o != nil {
			return *o
		}
		n := 0
		_, _, err := p.call("tools/call", map[string]any{"name": "slow", "arguments": map[string]int{"steps": 3, "delayMs": 5},
			"_meta": map[string]any{"progressToken": "p"}}, func(r *jsonrpc.Request) {
			if r.Method == protocol.MethodProgress {
				n++
			}
		})
		if err != nil {
			return fail("%v", err)
		}
		if n != 3 {
			return fail("%d progress notifications, want 3", n)
		}
		return pass("3 notifications/progress")
	})
}

// datagramResend is how often checkDatagramUnsupported sends its datagram
// again while no error has come.
const datagramResend = 250 * time.Millisecond

// checkDatagramUnsupported sends a progress datagram where the session has
// none. The guide (§4.2) gives -32004 when the server indicated
// datagramsSupported: false; with optOut, this project's rule: the client
// said datagrams: false (spec §4.1), and a datagram is -32004 whatever the
// server supports.
func checkDatagramUnsupported(optOut bool) func(context.Context, Target) outcome {
	return func(ctx context.Context, t Target) outcome {
		w := schemaOnly
		if optOut {
			w = noDatagrams
		}
		return withProbe(ctx, t, []string{protocol.EncodingJSON}, w, func(p *probe) outcome {
			switch ds := p.init.Transport.DatagramsSupported; {
			case optOut:
			case ds == nil:
				return skip("not applicable: the server announced no datagramsSupported (init.json judges that)")
			case *ds:
				return skip("not applicable: the server announced datagramsSupported: true (the guide's -32004 is for a server that indicated false; datagram.opt-out checks the client's opt-out)")
			}
			d := append(wire.DatagramHeader{Channel: wire.ChannelProgress, RequestID: 1}.Append(nil), `{"progress":1}`...)
			if err := p.sess.SendDatagram(d); err != nil {
				return skip("not applicable: the server's QUIC connection takes no datagrams (%v)", err)
			}
			// A datagram may be lost (QUIC does not send it again; a
			// socket whose buffer is full drops it, as under two suites
			// side by side on loopback): the same datagram goes again
			// every datagramResend until the error comes, each worth one.
			stop := make(chan struct{})
			var resends sync.WaitGroup
			resends.Go(func() {
				tick := time.NewTicker(datagramResend)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						_ = p.sess.SendDatagram(d)
					}
				}
			})
			e, err := p.notice()
			close(stop)
			resends.Wait()
			if err != nil {
				return fail("no null-id error: %v", err)
			}
			if e.Code != jsonrpc.CodeDatagramsNotSupported {
				return fail("error %d, want -32004", e.Code)
			}
			return pass("error %d", e.Code)
		})
	}
}

func slowRequest(p *probe, steps int) (jsonrpc.ID, error) {
	id := jsonrpc.Int64ID(int64(p.nextID))
	p.nextID++
	req, _ := jsonrpc.NewRequest(id, "tools/call", map[string]any{"name": "slow", "arguments": map[string]int{"steps": steps, "delayMs": 10}})
	return id, p.send(req)
}

// checkCancel cancels a slow request. The guide (§6) answers it with an
// error; with code it must be -32800, this project's erratum.
func checkCancel(code bool) func(context.Context, Target) outcome {
	return func(ctx context.Context, t Target) outcome {
		return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
			if o := p.needTool("slow"); o != nil {
				return *o
			}
			id, err := slowRequest(p, 1000)
			if err != nil {
				return fail("%v", err)
			}
			// A ping answered after the request was sent means the server
			// has read the request: the cancel finds it in flight.
			if r, _, err := p.call(protocol.MethodPing, nil, nil); err != nil {
				return fail("ping behind the slow request: %v", err)
			} else if r.Error != nil {
				return fail("ping behind the slow request: error %d %s", r.Error.Code, r.Error.Message)
			}
			c, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodCancel, map[string]any{"requestId": json.RawMessage(id.Raw()), "reason": "conformance"})
			_ = p.send(c)
			r, err := p.response(id, nil)
			switch {
			case code:
				return expectCode(r, err, jsonrpc.CodeRequestCancelled)
			case err != nil:
				return fail("no answer: %v", err)
			case r.Error == nil:
				return fail("the cancelled request was answered with a result %s", clip(string(r.Result)))
			}
			return pass("error %d %q", r.Error.Code, r.Error.Message)
		})
	}
}

func checkLateCancel(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		r, id, err := p.call(protocol.MethodPing, nil, nil)
		if err != nil || r.Error != nil {
			return fail("ping: %v", err)
		}
		c, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodCancel, map[string]any{"requestId": json.RawMessage(id.Raw())})
		_ = p.send(c)
		r, _, err = p.call(protocol.MethodPing, nil, nil)
		if err != nil || r.Error != nil {
			return fail("after a late cancel: %v %v", err, r)
		}
		return pass("ignored")
	})
}

// checkShutdown sends $/shutdown with a request in flight: its result must
// arrive, then the session must end (guide §7). With fin the end must be a
// FIN on the control stream, this project's addition.
func checkShutdown(fin bool) func(context.Context, Target) outcome {
	return func(ctx context.Context, t Target) outcome {
		return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
			if o := p.needTool("slow"); o != nil {
				return *o
			}
			id, err := slowRequest(p, 5)
			if err != nil {
				return fail("%v", err)
			}
			s, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodShutdown, nil)
			_ = p.send(s)
			r, err := p.response(id, nil)
			if err != nil {
				return fail("the request in flight was lost: %v", err)
			}
			if r.Error != nil {
				return fail("the request in flight failed: %d %s", r.Error.Code, r.Error.Message)
			}
			// Nothing is left in flight: the server ends the session.
			for {
				_, _, err := p.read()
				switch {
				case errors.Is(err, io.EOF):
					_ = p.ctrl.Close()
					return pass("result delivered, then the control stream finished")
				case err != nil && !fin && isSessionClosed(err):
					return pass("result delivered, then the session closed: %v", err)
				case err != nil:
					return fail("the control stream did not finish: %v", err)
				}
			}
		})
	}
}

// isSessionClosed reports whether err says that the peer closed the session
// (a deadline is not a close).
func isSessionClosed(err error) bool {
	var se *webtransport.SessionError
	return errors.As(err, &se)
}

func checkShutdownRefuses(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		if o := p.needTool("slow"); o != nil {
			return *o
		}
		if _, err := slowRequest(p, 5); err != nil { // keeps the session draining
			return fail("%v", err)
		}
		s, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodShutdown, nil)
		_ = p.send(s)
		r, _, err := p.call("tools/list", nil, nil)
		switch {
		case err != nil:
			return fail("no answer: %v", err)
		case r.Error == nil:
			return fail("a request after $/shutdown was served")
		}
		return pass("refused with %d %q", r.Error.Code, r.Error.Message)
	})
}

// checkOrigin dials with a foreign Origin. The guide says to validate
// Origin (§8, §9) and names no status: any 4xx refusal of the CONNECT
// passes. With exact, this project's status: 403 (spec §9).
func checkOrigin(exact bool) func(context.Context, Target) outcome {
	return func(ctx context.Context, t Target) outcome {
		p, resp, err := dial(ctx, t, http.Header{"Origin": {"https://evil.example"}})
		if err == nil {
			p.close()
			return fail("a CONNECT from https://evil.example was accepted")
		}
		if resp == nil {
			return fail("no HTTP answer to the CONNECT: %v", err)
		}
		switch code := resp.StatusCode; {
		case exact && code != http.StatusForbidden:
			return fail("refused with HTTP %d, want 403", code)
		case code < 400 || code > 499:
			return fail("answered HTTP %d (%v), want a 4xx refusal", code, err)
		}
		return pass("HTTP %d", resp.StatusCode)
	}
}

// checkTLS13 reads the TLS version of a session that initialized: evidence
// from a real handshake with the peer. (QUIC itself demands TLS 1.3, RFC
// 9001 §4.2, so a TLS 1.2 client is refused by its own stack before a
// packet is sent: a refusal proves nothing about the server.)
func checkTLS13(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		v := p.sess.tlsVersion
		if v != tls.VersionTLS13 {
			return fail("the session negotiated %s", tls.VersionName(v))
		}
		return pass("initialize answered over %s", tls.VersionName(v))
	})
}

func checkUnknownMethod(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		r, _, err := p.call("conformance/no-such-method", nil, nil)
		return expectCode(r, err, jsonrpc.CodeMethodNotFound)
	})
}

func checkStreamLimit(ctx context.Context, t Target) outcome {
	return withProbe(ctx, t, []string{protocol.EncodingJSON}, schemaOnly, func(p *probe) outcome {
		max := p.init.Transport.MaxConcurrentStreams
		if max <= 0 || max > 255 {
			return skip("maxConcurrentStreams %d: too many streams to cross here", max)
		}
		// The streams are read (so flow control never stalls the server),
		// but each is large enough to be still open when the server tries
		// to open one more than the limit.
		go func() {
			for {
				rs, err := p.sess.AcceptUniStream(ctx)
				if err != nil {
					return
				}
				go io.Copy(io.Discard, rs)
			}
		}()
		r, _, o := toolCall(p, "generate", map[string]any{"bytes": 4 << 20, "streams": max + 1}, nil)
		if o != nil {
			return *o
		}
		return expectCode(r, nil, jsonrpc.CodeStreamLimitExceeded)
	})
}
