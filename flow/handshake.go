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
	cfg *ServerConfig
}

// handleInitialize answers initialize (spec §4): it picks the encoding,
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
	enc := codec.JSON
	// A client that follows the published schema cannot ask for datagrams:
	// it gets them unless it said datagrams: false (spec §4.1, §6).
	wantDatagrams := true
	hello := s.hello.Load()
	if hello && p.Transport != nil {
		fail(jsonrpc.CodeInvalidRequest, "$/hello already settled the transport: initialize carries none (spec §11.4)")
		return
	}
	if t := p.Transport; t != nil {
		if t.Type != protocol.TransportType {
			fail(jsonrpc.CodeInvalidRequest, fmt.Sprintf("unknown transport type %q: this server speaks %q (spec §4.1)", t.Type, protocol.TransportType))
			return
		}
		prefs := make([]string, len(t.Encodings))
		for i, e := range t.Encodings {
			prefs[i] = string(e)
		}
		var err error
		if enc, err = codec.Negotiate(prefs, cfg.Encodings); err != nil {
			fail(jsonrpc.CodeInvalidParams, err.Error())
			return
		}
		if t.Datagrams != nil {
			wantDatagrams = *t.Datagrams
		}
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
	res.Transport = ServerTransport{
		Type:                 protocol.TransportType,
		Version:              protocol.Version,
		Encoding:             enc,
		MaxConcurrentStreams: s.lim.MaxConcurrentStreams,
		DatagramsSupported:   !cfg.DisableDatagrams,
		MaxFrameSize:         s.lim.MaxFrameSize,
	}
	resp, err := jsonrpc.NewResult(m.ID, res)
	if err != nil {
		fail(jsonrpc.CodeInternalError, err.Error())
		return
	}
	s.setState(StateInitializing)
	hs := &handshake{peerMaxFrame: wire.DefaultMaxFrameSize, datagrams: wantDatagrams && !cfg.DisableDatagrams, params: &p, result: res}
	if hello {
		// The transport is $/hello's (spec §11.4); so is the encoding.
		enc = s.Encoding()
		hs.datagrams = s.handshake().datagrams
		res.Transport.Encoding = enc
	}
	s.hs.Store(hs)
	// initialize and its result are always JSON (spec §4.2); everything
	// after, in both directions, is in the chosen encoding.
	answer(resp)
	if !s.faults().NoEncodingSwitch {
		s.enc.Store(&codecBox{s.codecs[enc]})
	}
	s.setState(StateReady)
	s.log.Debug("session ready", "encoding", enc, "datagrams", hs.datagrams, "client", p.ClientInfo.Name)
	if cfg.OnSession != nil {
		go cfg.OnSession(s)
	}
}

// initialize runs the client side of the handshake (spec §4). It is called
// before the reading goroutine starts, and reads the result itself so that
// the encoding switch happens before any later frame is read.
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
		if ok {
			// The transport is settled: initialize carries none (§11.4).
			return s.initializeAfterHello(ctx, version, caps, cfg)
		}
	}
	p := InitializeParams{
		ProtocolVersion: version,
		Capabilities:    caps,
		ClientInfo:      cfg.Info,
		Transport:       &ClientTransport{Type: protocol.TransportType, Version: protocol.Version, Encodings: encs},
	}
	if cfg.DisableDatagrams {
		// Only the refusal is sent: the published schema's
		// ClientTransportCapabilities allows no other members, and absent
		// means datagrams (spec §4.1).
		p.Transport.Datagrams = new(false)
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
	if err := s.adoptTransport(res.Transport, encs, cfg, &res); err != nil {
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

// initializeAfterHello runs a 2025 initialize on a session whose transport
// $/hello settled (spec §11.4): no transport member, no encoding switch.
func (s *Session) initializeAfterHello(ctx context.Context, version string, caps json.RawMessage, cfg *ClientConfig) error {
	s.setState(StateInitializing)
	r, err := s.firstExchange(ctx, protocol.MethodInitialize, InitializeParams{ProtocolVersion: version, Capabilities: caps, ClientInfo: cfg.Info})
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
	hs := *s.handshake() // $/hello's, now with the result: published a second time
	hs.result = &res
	s.hs.Store(&hs)
	s.setState(StateReady)
	return s.Notify(protocol.MethodInitialized, nil)
}
