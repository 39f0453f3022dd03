package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/mcp-flow/mcp-flow/wtconn"
)

// The judge is the client-mode server. It is written against the guide, not
// against package flow's server: it speaks the wire itself (package wire for
// frames and headers, package codec for encodings, package jsonrpc for
// messages) and does for each scenario what the guide says a server does, and
// nothing that only this project adds. A client that follows the guide alone
// gets everything the guide promises from it: datagrams when it names no
// `datagrams` field, and a session that ends after $/shutdown without its FIN.

// The judge's capabilities, as guide §8 (ServerTransportCapabilities) names
// them.
const (
	judgeVersion              = "0.1"
	judgeMaxConcurrentStreams = 16
)

// The datagram channels, written here from guide §2.3 (channel, flags,
// request id) rather than taken from the implementation.
const (
	guideChannelProgress = 0x01
	guideChannelAudio    = 0x02
	guideChannelLog      = 0x03
)

// judgeSession is one client session as the judge serves it. One goroutine
// (run) reads the control stream; tools run on their own; writes are
// serialized by wmu.
type judgeSession struct {
	s       wtconn.Session
	sc      scenario
	ev      *evidence
	enc     codec.Codec   // negotiated; set before any tool runs
	closing *atomic.Bool  // the judgeServer's
	finWait time.Duration // Options.FINWait

	wmu  sync.Mutex
	ctrl wtconn.Stream

	mu        sync.Mutex
	nextID    int64
	pending   map[string]chan *jsonrpc.Response // our requests to the client, by id
	tags      uint32
	inflight  sync.WaitGroup                // tool calls
	bg        sync.WaitGroup                // what tools started (stream writers); they end with the session
	cancels   map[string]context.CancelFunc // tool calls by request id
	shutdown  bool                          // $/shutdown sent or received
	ctrlEOF   chan struct{}                 // closed when the client finished the control stream (FIN)
	sentShut  bool                          // the judge sent $/shutdown
	draining  bool
	drainDone chan struct{}
}

// send writes one message on the control stream in enc.
func (js *judgeSession) send(enc codec.Codec, m jsonrpc.Message) error {
	b, err := enc.Append(nil, m)
	if err != nil {
		return err
	}
	js.wmu.Lock()
	defer js.wmu.Unlock()
	_, err = js.ctrl.Write(wire.AppendFrame(nil, b))
	return err
}

func (js *judgeSession) run() {
	defer js.bg.Wait()
	defer js.inflight.Wait()
	defer js.s.CloseWithError(0, "") //nolint:errcheck // the session may already be over
	ctx := js.s.Context()
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	ctrl, err := js.s.AcceptStream(actx)
	cancel()
	if err != nil {
		js.ev.note("no control stream: %v", err)
		return
	}
	js.ctrl = ctrl
	js.ctrlEOF = make(chan struct{})
	js.drainDone = make(chan struct{})
	js.cancels = map[string]context.CancelFunc{}
	fr := wire.NewFrameReader(ctrl, wire.DefaultMaxFrameSize)
	if !js.initialize(fr) {
		return
	}
	go js.datagrams(ctx)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			if errors.Is(err, io.EOF) {
				js.mu.Lock()
				if js.shutdown {
					js.ev.set("fin after shutdown")
				}
				js.mu.Unlock()
				js.ev.set("fin")
				close(js.ctrlEOF)
				// The client is done sending: drain, then end.
				js.startDrain()
				select {
				case <-js.drainDone:
				case <-ctx.Done():
				}
			} else if !js.closing.Load() {
				js.ev.mu.Lock()
				js.ev.teardown = err.Error()
				js.ev.mu.Unlock()
			}
			return
		}
		p, err := js.enc.Decode(f)
		if err != nil {
			code := jsonrpc.CodeParseError
			if _, jerr := codec.Default(codec.JSON).Decode(f); jerr == nil && js.enc.Name() != codec.JSON {
				code = jsonrpc.CodeEncodingMismatch
			}
			js.ev.note("a frame not in the negotiated encoding %s (answered %d)", js.enc.Name(), code)
			_ = js.send(codec.Default(codec.JSON), jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(code, "not "+string(js.enc.Name()))))
			continue
		}
		msgs, replies := jsonrpc.Validate(p)
		for _, r := range replies {
			js.ev.note("an invalid JSON-RPC message: %d %s", r.Error.Code, r.Error.Message)
			_ = js.send(js.enc, r)
		}
		for _, m := range msgs {
			js.handle(ctx, m)
		}
	}
}

// initialize reads the client's first frame, which guide §1 and §3 make a
// JSON initialize, and answers it with ServerTransportCapabilities.
func (js *judgeSession) initialize(fr *wire.FrameReader) bool {
	f, err := fr.ReadFrame()
	if err != nil {
		js.ev.note("no initialize: %v", err)
		return false
	}
	json0 := codec.Default(codec.JSON)
	p, err := json0.Decode(f)
	if err != nil {
		js.ev.note("the first frame is not JSON: %v", err)
		_ = js.send(json0, jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeParseError, "initialize must be JSON")))
		return false
	}
	msgs, _ := jsonrpc.Validate(p)
	var req *jsonrpc.Request
	if len(msgs) == 1 {
		req, _ = msgs[0].(*jsonrpc.Request)
	}
	if req == nil || req.Method != protocol.MethodInitialize || !req.IsCall() {
		js.ev.note("the first frame is not an initialize request")
		return false
	}
	var params struct {
		ProtocolVersion string        `json:"protocolVersion"`
		Transport       initTransport `json:"transport"`
	}
	_ = json.Unmarshal(req.Params, &params)
	t := params.Transport
	if t.Type != protocol.TransportType {
		js.ev.note("initialize had no mcp-flow transport object (type %q)", t.Type)
		_ = js.send(json0, jsonrpc.NewErrorResponse(req.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "unknown transport type")))
		return false
	}
	name, err := codec.Negotiate(t.Encodings, js.sc.encodings)
	if err != nil {
		js.ev.note("no common encoding: %v", err)
		_ = js.send(json0, jsonrpc.NewErrorResponse(req.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, err.Error())))
		return false
	}
	js.enc = codec.Default(name)
	pv := params.ProtocolVersion
	if pv == "" {
		pv = protocol.MCP20241105
	}
	res, err := jsonrpc.NewResult(req.ID, map[string]any{
		"protocolVersion": pv,
		"capabilities":    map[string]any{"tools": map[string]any{}},
		"serverInfo":      map[string]string{"name": "mcp-flow-conformance judge", "version": judgeVersion},
		"transport": map[string]any{
			"type": protocol.TransportType, "version": protocol.Version, "encoding": name,
			"maxConcurrentStreams": judgeMaxConcurrentStreams, "datagramsSupported": true,
			"maxFrameSize": wire.DefaultMaxFrameSize,
		},
	})
	if err != nil {
		js.ev.note("judge: %v", err)
		return false
	}
	if err := js.send(json0, res); err != nil {
		js.ev.note("cannot answer initialize: %v", err)
		return false
	}
	js.ev.mu.Lock()
	js.ev.initOK, js.ev.transport, js.ev.encoding = true, t, name
	js.ev.mu.Unlock()
	return true
}

// datagrams drains the client's datagrams (the judge has no use for them).
func (js *judgeSession) datagrams(ctx context.Context) {
	for {
		if _, err := js.s.ReceiveDatagram(ctx); err != nil {
			return
		}
	}
}

func (js *judgeSession) handle(ctx context.Context, m jsonrpc.Message) {
	switch m := m.(type) {
	case *jsonrpc.Response:
		js.mu.Lock()
		ch := js.pending[m.ID.Raw()]
		delete(js.pending, m.ID.Raw())
		js.mu.Unlock()
		if ch != nil {
			ch <- m
		} else if m.Error != nil {
			js.ev.mu.Lock()
			js.ev.unsolicited = append(js.ev.unsolicited, fmt.Sprintf("id %s: %d %s", m.ID, m.Error.Code, m.Error.Message))
			js.ev.mu.Unlock()
		}
	case *jsonrpc.Request:
		switch m.Method {
		case protocol.MethodInitialized:
			// The published v0.1 example client sends it with "id":0 and
			// takes the next frame for the answer to its next request: the
			// judge reads it as the notification its name says it is.
			if m.IsCall() {
				js.ev.set("notifications/initialized with an id")
			}
		case protocol.MethodShutdown:
			js.ev.set("client shutdown")
			js.startDrain()
		case protocol.MethodCancel:
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			_ = json.Unmarshal(m.Params, &p)
			js.mu.Lock()
			cancel := js.cancels[string(p.RequestID)]
			js.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		case protocol.MethodPing:
			js.reply(m.ID, map[string]any{}, nil)
		case "tools/list":
			js.reply(m.ID, json.RawMessage(`{"tools":[{"name":"scenario","inputSchema":{"type":"object"}}]}`), nil)
		case "tools/call":
			js.call(ctx, m)
		default:
			if m.IsCall() {
				js.reply(m.ID, nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, m.Method))
			}
		}
	}
}

func (js *judgeSession) reply(id jsonrpc.ID, v any, e *jsonrpc.Error) {
	var r *jsonrpc.Response
	if e != nil {
		r = jsonrpc.NewErrorResponse(id, e)
	} else {
		var err error
		if r, err = jsonrpc.NewResult(id, v); err != nil {
			r = jsonrpc.NewErrorResponse(id, jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error()))
		}
	}
	if err := js.send(js.enc, r); err != nil {
		js.ev.note("cannot answer %s: %v", id, err)
	}
}

// call runs the tool "scenario" for one tools/call.
func (js *judgeSession) call(ctx context.Context, req *jsonrpc.Request) {
	var p struct {
		Name string `json:"name"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(req.Params, &p)
	if p.Name != "scenario" {
		// A client with a tool name of its own (the v0.1 example calls
		// echo_joke) is judged all the same: the checks are about the
		// transport, not about the name.
		js.ev.set("tool " + p.Name)
	}
	js.mu.Lock()
	if js.shutdown {
		js.mu.Unlock()
		js.reply(req.ID, nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "shutting down"))
		return
	}
	tctx, cancel := context.WithCancel(ctx)
	js.cancels[req.ID.Raw()] = cancel
	js.inflight.Add(1)
	js.mu.Unlock()
	js.ev.mu.Lock()
	if !js.ev.called {
		js.ev.called, js.ev.callID = true, req.ID
	}
	js.ev.mu.Unlock()
	c := &judgeCall{js: js, id: req.ID, progressToken: p.Meta.ProgressToken}
	go func() {
		defer js.inflight.Done()
		defer cancel()
		v, err := js.sc.tool(tctx, c)
		// A cancelled call is answered with an error (guide §6); the code
		// is the project's -32800, as the guide's -32000 is the stream
		// limit's. No client check cancels: the contract has no abort.
		if tctx.Err() != nil && ctx.Err() == nil {
			js.reply(req.ID, nil, jsonrpc.NewError(jsonrpc.CodeRequestCancelled, "cancelled"))
			return
		}
		if err != nil {
			js.reply(req.ID, nil, jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error()))
			return
		}
		js.reply(req.ID, v, nil)
		if c.after != nil {
			c.after()
		}
	}()
}

// startDrain begins the guide's shutdown (§1, §7): no new work, the work in
// flight finishes, then the session closes. The judge waits a bounded time
// for the client's FIN (only the project's check reads it; a client that
// follows the guide alone never sends one), finishes its own direction of the
// control stream, and closes the session.
func (js *judgeSession) startDrain() {
	js.mu.Lock()
	js.shutdown = true
	if js.draining {
		js.mu.Unlock()
		return
	}
	js.draining = true
	js.mu.Unlock()
	go func() {
		defer close(js.drainDone)
		js.inflight.Wait()
		t := time.NewTimer(js.finWait)
		select {
		case <-js.ctrlEOF:
		case <-t.C:
		case <-js.s.Context().Done():
		}
		t.Stop()
		js.closing.Store(true)
		js.wmu.Lock()
		_ = js.ctrl.Close()
		js.wmu.Unlock()
		_ = js.s.CloseWithError(0, "")
	}()
}
