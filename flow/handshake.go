package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
)

// handshake is what initialize settled (spec §4). A session publishes it
// once, complete, when the handshake ends (Session.hs), and never changes it
// afterwards: goroutines that run before and during the handshake (the
// datagram and stream readers) read it with one atomic load and see either
// nothing or all of it.
type handshake struct {
	peerMaxFrame uint32            // the peer's maxFrameSize: the largest frame we may send
	datagrams    bool              // progress, logs and audio travel as datagrams (spec §6)
	params       *InitializeParams // what the client sent (server side)
	result       *InitializeResult
	hello        *ServerTransport // what $/hello answered (server side, spec §11.3); nil without one
}

// beforeHandshake is what a session assumes until its handshake is
// published: the default frame size, no datagrams.
var beforeHandshake = &handshake{peerMaxFrame: wire.DefaultMaxFrameSize}

// handshake returns the published handshake, or beforeHandshake.
func (s *Session) handshake() *handshake {
	if h := s.hs.Load(); h != nil {
		return h
	}
	return beforeHandshake
}

// serverSide holds what a server session needs for initialize.
type serverSide struct {
	cfg    *ServerConfig
	server *Server // its listeners (listen.go)
}

// chooseTransport is the server's half of every negotiation: initialize's
// transport member (spec §4.1) and $/hello (§11.3) alike. t is the client's
// transport object (nil: it named none), version the MCP-Flow version the
// answer names. It returns the transport object to answer with, and whether
// datagrams are on; or the error to answer instead.
//
// The encoding is the first of the client's that the server speaks (json
// when it named none). A client that follows the published schema cannot
// ask for datagrams: it gets them unless it said datagrams: false (§4.1,
// §6), or the server disabled them.
func (s *Session) chooseTransport(t *ClientTransport, version string) (ServerTransport, bool, *jsonrpc.Error) {
	cfg := s.srv.cfg
	tr := ServerTransport{
		Type:                 protocol.TransportType,
		Version:              version,
		Encoding:             codec.JSON,
		MaxConcurrentStreams: s.lim.MaxConcurrentStreams,
		DatagramsSupported:   !cfg.DisableDatagrams,
		MaxFrameSize:         s.lim.MaxFrameSize,
	}
	datagrams := !cfg.DisableDatagrams
	if t == nil {
		return tr, datagrams, nil
	}
	if t.Type != protocol.TransportType {
		return tr, false, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, fmt.Sprintf("unknown transport type %q: this server speaks %q (spec §4.1)", t.Type, protocol.TransportType))
	}
	prefs := make([]string, len(t.Encodings))
	for i, e := range t.Encodings {
		prefs[i] = string(e)
	}
	enc, err := codec.Negotiate(prefs, cfg.Encodings)
	if err != nil {
		return tr, false, jsonrpc.NewError(jsonrpc.CodeInvalidParams, err.Error())
	}
	tr.Encoding = enc
	if t.Datagrams != nil && !*t.Datagrams {
		datagrams = false
	}
	return tr, datagrams, nil
}

// settle ends the server's half of a negotiation (spec §4.2, §11.3): it
// publishes hs, answers with resp in JSON, then switches both directions to
// enc. The reading goroutine calls it, so the next frame is read in enc.
func (s *Session) settle(hs *handshake, resp *jsonrpc.Response, answer func(*jsonrpc.Response), enc codec.Name) {
	s.hs.Store(hs)
	answer(resp)
	s.enc.Store(&codecBox{s.codecs[enc]})
}

// handleInitialize answers initialize (spec §4): it negotiates the
// transport (chooseTransport; after $/hello, the hello's stands, §11.4),
// answers in JSON, then switches both directions to the chosen encoding
// before the next frame is read (the reading goroutine calls it).
func (s *Session) handleInitialize(m *jsonrpc.Request, answer func(*jsonrpc.Response)) {
	cfg := s.srv.cfg
	fail := func(code jsonrpc.Code, msg string) {
		answer(jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(code, msg)))
	}
	var p InitializeParams
	if len(m.Params) == 0 || json.Unmarshal(m.Params, &p) != nil {
		fail(jsonrpc.CodeInvalidParams, "initialize params must be an object with protocolVersion, capabilities and clientInfo")
		return
	}
	hello := s.hello.Load()
	if hello && p.Transport != nil {
		fail(jsonrpc.CodeInvalidRequest, "$/hello already settled the transport: initialize carries none (spec §11.4)")
		return
	}
	tr, datagrams, jerr := s.chooseTransport(p.Transport, protocol.Version)
	if jerr != nil {
		answer(jsonrpc.NewErrorResponse(m.ID, jerr))
		return
	}
	version := p.ProtocolVersion
	if !slices.Contains(mcpVersions, version) {
		version = mcpVersions[0]
	}
	caps := cfg.Capabilities
	if len(caps) == 0 {
		caps = json.RawMessage("{}")
	}
	res := &InitializeResult{
		ProtocolVersion: version,
		Capabilities:    caps,
		ServerInfo:      cfg.Info,
		Instructions:    cfg.Instructions,
	}
	if cfg.OnInitialize != nil {
		up, err := cfg.OnInitialize(s.ctx, s, m.Params)
		if err != nil {
			var je *jsonrpc.Error
			if !errors.As(err, &je) {
				je = jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error())
			}
			answer(jsonrpc.NewErrorResponse(m.ID, je))
			return
		}
		res = up
	}
	var helloTr *ServerTransport
	if hello {
		// The transport is $/hello's (spec §11.4): the result repeats it,
		// and its encoding and datagrams stand.
		helloTr = s.handshake().hello
		tr, datagrams = *helloTr, s.handshake().datagrams
	}
	res.Transport = tr
	resp, err := jsonrpc.NewResult(m.ID, res)
	if err != nil {
		fail(jsonrpc.CodeInternalError, err.Error())
		return
	}
	s.setState(StateInitializing)
	enc := tr.Encoding
	if s.faults().NoEncodingSwitch {
		enc = s.Encoding()
	}
	// initialize and its result are always JSON (spec §4.2); everything
	// after, in both directions, is in the chosen encoding.
	s.settle(&handshake{peerMaxFrame: wire.DefaultMaxFrameSize, datagrams: datagrams, params: &p, result: res, hello: helloTr}, resp, answer, enc)
	s.setState(StateReady)
	s.markOpen()
	s.log.Debug("session ready", "encoding", res.Transport.Encoding, "datagrams", datagrams, "client", p.ClientInfo.Name)
	if cfg.OnSession != nil {
		go cfg.OnSession(s)
	}
}

// offer is the client's transport object (spec §4.1, §11.3): the MCP-Flow
// version the method names and the encodings it takes, preferred first. Of
// datagrams only the refusal is sent: the published schema's
// ClientTransportCapabilities allows no other members, and absent means
// datagrams.
func offer(version string, encs []codec.Name, cfg *ClientConfig) *ClientTransport {
	t := &ClientTransport{Type: protocol.TransportType, Version: version, Encodings: encs}
	if cfg.DisableDatagrams {
		t.Datagrams = new(false)
	}
	return t
}

// initialize runs the client side of the handshake (spec §4): $/hello first
// when asked for or for a 2026-07-28 session (§11.4), then initialize unless
// the session is stateless. It is called before the reading goroutine
// starts, and reads each answer itself so that the encoding switch happens
// before any later frame is read.
func (s *Session) initialize(ctx context.Context, cfg *ClientConfig) error {
	encs := cfg.Encodings
	if len(encs) == 0 {
		encs = []codec.Name{codec.CBOR, codec.JSON}
	}
	version := cfg.ProtocolVersion
	if version == "" {
		version = protocol.MCPLatest
	}
	caps := cfg.Capabilities
	if len(caps) == 0 {
		caps = json.RawMessage("{}")
	}
	stateless := slices.Contains(protocol.MCPStatelessVersions(), version)
	hello := false
	if stateless || cfg.Hello {
		ok, err := s.sayHello(ctx, cfg, encs)
		if err != nil {
			return err
		}
		if stateless {
			if !ok {
				return fmt.Errorf("server refused $/hello: it does not speak MCP %s over MCP-Flow (spec §11.4)", version)
			}
			s.statelessVersion, s.statelessCaps = version, caps
			s.setState(StateReady)
			return nil
		}
		hello = ok
	}
	p := InitializeParams{ProtocolVersion: version, Capabilities: caps, ClientInfo: cfg.Info}
	if !hello {
		// Once $/hello settled the transport, initialize carries none (§11.4).
		p.Transport = offer(protocol.Version, encs, cfg)
	}
	s.setState(StateInitializing)
	r, err := s.firstExchange(ctx, protocol.MethodInitialize, p)
	if err != nil {
		return err
	}
	if r.Error != nil {
		return r.Error
	}
	var res InitializeResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return fmt.Errorf("initialize result: %w", err)
	}
	if hello {
		hs := *s.handshake() // $/hello's, now with the result: published a second time
		hs.result = &res
		s.hs.Store(&hs)
	} else if err := s.adoptTransport(res.Transport, encs, cfg, &res); err != nil {
		return err
	}
	s.setState(StateReady)
	return s.Notify(protocol.MethodInitialized, nil)
}

func joinNames(ns []codec.Name) string {
	ss := make([]string, len(ns))
	for i, n := range ns {
		ss[i] = string(n)
	}
	return strings.Join(ss, ", ")
}
