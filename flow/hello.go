package flow

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
)

// HelloParams are the params of $/hello (spec §11.3): the guide's
// ClientTransportCapabilities under transport.
type HelloParams struct {
	Transport *ClientTransport `json:"transport"`
}

// HelloResult is the result of $/hello (spec §11.3).
type HelloResult struct {
	Transport ServerTransport `json:"transport"`
}

// handleHello answers $/hello (spec §11.3): it negotiates with
// chooseTransport, as initialize does (§4.1), and settles as initialize
// does: answers in JSON, then switches both directions to the chosen
// encoding before the next frame is read. The
// session stays CONTROL_OPENED: a 2025 initialize or 2026-07-28 requests
// follow (§11.4).
//
// A $/hello after a refused one (or after a refused initialize: refusedInit
// records both) is -32600, as any second $/hello is (§11.4): the first
// frame was that refused request. The session survives: the client may
// still fall back to initialize, as it would with a guide-only server.
func (s *Session) handleHello(m *jsonrpc.Request, answer func(*jsonrpc.Response)) {
	if s.refusedInit.Load() {
		answer(jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest,
			"a $/hello or initialize was already refused on this session: a second $/hello is refused (spec §11.4)")))
		return
	}
	refuse := func(e *jsonrpc.Error) {
		s.refusedInit.Store(true)
		answer(jsonrpc.NewErrorResponse(m.ID, e))
	}
	var p HelloParams
	if len(m.Params) == 0 || json.Unmarshal(m.Params, &p) != nil || p.Transport == nil {
		refuse(jsonrpc.NewError(jsonrpc.CodeInvalidParams, "$/hello params must be {transport: ClientTransportCapabilities} (spec §11.3)"))
		return
	}
	tr, datagrams, jerr := s.chooseTransport(p.Transport, protocol.VersionHello)
	if jerr != nil {
		refuse(jerr)
		return
	}
	resp, err := jsonrpc.NewResult(m.ID, HelloResult{Transport: tr})
	if err != nil {
		refuse(jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error()))
		return
	}
	s.hello.Store(true)
	s.settle(&handshake{peerMaxFrame: wire.DefaultMaxFrameSize, datagrams: datagrams, hello: &tr}, resp, answer, tr.Encoding) // always JSON (spec §11.3)
	s.log.Debug("$/hello settled the transport", "encoding", tr.Encoding, "datagrams", datagrams)
}

// isStateless reports whether m is a 2026-07-28 request (IsStatelessRequest).
func isStateless(m *jsonrpc.Request) bool { return IsStatelessRequest(m) }

// metaVersion returns params._meta["io.modelcontextprotocol/protocolVersion"]
// (MetaVersion).
func metaVersion(params json.RawMessage) string { return MetaVersion(params) }

// admitStateless judges a 2026-07-28 request by its own _meta (spec §11.5):
// an unsupported version gets UnsupportedProtocolVersionError (-32022);
// server/discover is answered here, unless a bridge's Handler answers it
// (ServerConfig.OnInitialize set: its upstream knows). The first admitted
// request makes the session stateless and READY. It reports whether the
// handler should run.
func (s *Session) admitStateless(m *jsonrpc.Request, answer func(*jsonrpc.Response)) bool {
	supported := protocol.MCPStatelessVersions()
	v := metaVersion(m.Params)
	if v == "" && m.Method == protocol.MethodDiscover {
		v = supported[0]
	}
	if !slices.Contains(supported, v) {
		e := jsonrpc.NewError(protocol.CodeUnsupportedProtocolVersion, "unsupported protocol version "+fmt.Sprintf("%q", v)+" (spec §11.5)")
		e.Data, _ = json.Marshal(map[string]any{"supported": supported, "requested": v})
		answer(jsonrpc.NewErrorResponse(m.ID, e))
		return false
	}
	if !s.stateless.Load() {
		s.stateless.Store(true)
		s.hs.CompareAndSwap(nil, &handshake{peerMaxFrame: wire.DefaultMaxFrameSize})
		s.setState(StateReady)
		s.markOpen()
		if cfg := s.srv.cfg; cfg.OnSession != nil {
			go cfg.OnSession(s)
		}
	}
	cfg := s.srv.cfg
	if m.Method != protocol.MethodDiscover || cfg.OnInitialize != nil {
		return true
	}
	caps := cfg.Capabilities
	if len(caps) == 0 {
		caps = json.RawMessage("{}")
	}
	info, _ := json.Marshal(cfg.Info)
	res := map[string]any{
		"supportedVersions": supported,
		"capabilities":      caps,
		"resultType":        "complete",
		"_meta":             map[string]json.RawMessage{protocol.MetaServerInfo: info},
	}
	if cfg.Instructions != "" {
		res["instructions"] = cfg.Instructions
	}
	resp, err := jsonrpc.NewResult(m.ID, res)
	if err != nil {
		resp = jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error()))
	}
	answer(resp)
	return false
}

// withResultType adds resultType "complete" last to a 2026-07-28 result
// that has none (spec §11.5; mcpjson.WithResultType keeps every other
// member in its place); errors and results with one pass as they are.
func (s *Session) withResultType(answer func(*jsonrpc.Response)) func(*jsonrpc.Response) {
	return func(r *jsonrpc.Response) {
		if r.Error == nil && len(r.Result) > 0 {
			if res := mcpjson.WithResultType(r.Result); len(res) != len(r.Result) {
				r = &jsonrpc.Response{ID: r.ID, Result: res}
			}
		}
		answer(r)
	}
}

// sayHello runs the client side of $/hello (spec §11.3) before the reading
// goroutine starts. ok is false when the server answered with an error (a
// guide-only server): the session is still in JSON and the caller falls
// back (§11.4).
func (s *Session) sayHello(ctx context.Context, cfg *ClientConfig, encs []codec.Name) (ok bool, err error) {
	r, err := s.firstExchange(ctx, protocol.MethodHello, HelloParams{Transport: offer(protocol.VersionHello, encs, cfg)})
	if err != nil {
		return false, err
	}
	if r.Error != nil {
		s.log.Debug("server refused $/hello; falling back (spec §11.4)", "error", r.Error)
		return false, nil
	}
	var res HelloResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return false, fmt.Errorf("$/hello result: %w", err)
	}
	if err := s.adoptTransport(res.Transport, encs, cfg, nil); err != nil {
		return false, err
	}
	s.hello.Store(true)
	return true, nil
}

// adoptTransport checks the server's transport object, publishes the
// handshake (with res, initialize's result, if any) and switches to its
// encoding (spec §4.2).
func (s *Session) adoptTransport(t ServerTransport, encs []codec.Name, cfg *ClientConfig, res *InitializeResult) error {
	if t.Type != protocol.TransportType {
		return fmt.Errorf("server answered transport type %q, not %q: it does not speak MCP-Flow", t.Type, protocol.TransportType)
	}
	if t.Encoding == "" {
		t.Encoding = codec.JSON
	}
	c, ok := s.codecs[t.Encoding]
	if !ok || (!slices.Contains(encs, t.Encoding) && t.Encoding != codec.JSON) {
		return fmt.Errorf("server chose encoding %q, which this client did not offer (%s)", t.Encoding, joinNames(encs))
	}
	hs := &handshake{peerMaxFrame: wire.DefaultMaxFrameSize, datagrams: !cfg.DisableDatagrams && t.DatagramsSupported, result: res}
	if t.MaxFrameSize != 0 {
		hs.peerMaxFrame = t.MaxFrameSize
	}
	s.hs.Store(hs)
	s.enc.Store(&codecBox{c})
	return nil
}

// firstExchange sends one request and reads frames itself until its answer
// (the reading goroutine has not started), answering ping on the way.
func (s *Session) firstExchange(ctx context.Context, method string, params any) (*jsonrpc.Response, error) {
	req, err := jsonrpc.NewRequest(jsonrpc.Uint32ID(s.nextID.Add(1)), method, params)
	if err != nil {
		return nil, err
	}
	if err := s.send(req); err != nil {
		return nil, err
	}
	type result struct {
		resp *jsonrpc.Response
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		for {
			frame, err := s.fr.ReadFrame()
			if err != nil {
				ch <- result{err: fmt.Errorf("reading the %s result: %w", method, err)}
				return
			}
			s.controlRead(frame)
			payload, err := s.enc.Load().c.Decode(frame)
			if err != nil {
				ch <- result{err: fmt.Errorf("%s result does not decode (spec §4.2: it is in the encoding before the switch): %w", method, err)}
				return
			}
			msgs, _ := jsonrpc.Validate(payload)
			for _, m := range msgs {
				if r, ok := m.(*jsonrpc.Response); ok && r.ID == req.ID {
					r.Result = append(json.RawMessage(nil), r.Result...)
					ch <- result{resp: r}
					return
				}
				if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() && r.Method == protocol.MethodPing {
					s.reply(&jsonrpc.Response{ID: r.ID, Result: json.RawMessage("{}")})
				}
				// Anything else before the result is ignored (spec §2).
			}
		}
	}()
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// statelessMeta are the edits that add the 2026-07-28 _meta members
// (protocol version and client capabilities) to the params of a request
// (spec §11.5); members the request already has win (a front forwards its
// client's own, §11.6).
func statelessMeta(version string, caps json.RawMessage) []mcpjson.Edit {
	if len(caps) == 0 {
		caps = json.RawMessage("{}")
	}
	v, _ := json.Marshal(version)
	return []mcpjson.Edit{mcpjson.Add(protocol.MetaProtocolVersion, v), mcpjson.Add(protocol.MetaClientCapabilities, caps)}
}
