// Command faultyclient is an MCP-Flow client written by hand on
// webtransport-go, for testing the conformance runner's client mode. With
// MCP_FLOW_FAULT empty it follows the client contract of package
// conformance; each fault breaks one rule:
//
//	string-ids        sends a string request id
//	no-switch         keeps sending JSON after the server chose cbor
//	accept-truncated  exits 0 after a failed execution stream
//	skip-stream       does not read the execution stream
//	no-ping           never answers the server's requests
//	no-fin            leaves without $/shutdown or finishing the control stream
//	close-on-audio    takes an audio datagram (channel 0x02) for a protocol
//	                  error: closes the session and fails
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "faultyclient:", err)
		os.Exit(1)
	}
}

func run() error {
	fault := os.Getenv("MCP_FLOW_FAULT")
	h, err := certs.ParseHash(os.Getenv("MCP_FLOW_CERT_HASH"))
	if err != nil {
		return err
	}
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{h}})
	tr := &webtransport.Transport{TLSClientConfig: tlsConf, QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true}}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, sess, err := tr.Dial(ctx, os.Getenv("MCP_FLOW_URL"), nil)
	if err != nil {
		return err
	}
	ctrl, err := sess.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	fr := wire.NewFrameReader(ctrl, 0)
	enc := codec.Default(codec.JSON)
	send := func(c codec.Codec, m jsonrpc.Message) error {
		b, err := c.Append(nil, m)
		if err != nil {
			return err
		}
		_, err = ctrl.Write(wire.AppendFrame(nil, b))
		return err
	}
	initReq, _ := jsonrpc.NewRequest(jsonrpc.Int64ID(1), protocol.MethodInitialize, map[string]any{
		"protocolVersion": protocol.MCPLatest, "capabilities": map[string]any{}, "clientInfo": map[string]string{"name": "faultyclient", "version": "0"},
		"transport": map[string]any{"type": protocol.TransportType, "version": protocol.Version, "encodings": []string{protocol.EncodingCBOR, protocol.EncodingJSON}}})
	if err := send(enc, initReq); err != nil {
		return err
	}
	f, err := fr.ReadFrame()
	if err != nil {
		return err
	}
	var init struct {
		Result struct {
			Transport struct{ Encoding codec.Name }
		}
	}
	if err := json.Unmarshal(f, &init); err != nil {
		return err
	}
	chosen := codec.Default(init.Result.Transport.Encoding)
	out := chosen
	if fault == "no-switch" {
		out = enc
	}
	n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodInitialized, nil)
	_ = send(out, n)

	// Execution streams, by tag.
	streams := make(chan *webtransport.ReceiveStream, 8)
	go func() {
		for {
			rs, err := sess.AcceptUniStream(ctx)
			if err != nil {
				return
			}
			streams <- rs
		}
	}()

	// close-on-audio: a datagram on the audio channel ends the session.
	badDatagram := make(chan error, 1)
	if fault == "close-on-audio" {
		go func() {
			for {
				b, err := sess.ReceiveDatagram(ctx)
				if err != nil {
					return
				}
				if h, _, err := wire.ParseDatagram(b); err == nil && h.Channel == wire.ChannelAudio {
					err := fmt.Errorf("a datagram on channel %s: not expected", h.Channel)
					badDatagram <- err
					_ = sess.CloseWithError(1, err.Error())
					return
				}
			}
		}()
	}

	id := jsonrpc.Int64ID(2)
	if fault == "string-ids" {
		id = jsonrpc.StringID("req-2")
	}
	call, _ := jsonrpc.NewRequest(id, "tools/call", map[string]any{"name": "scenario", "arguments": map[string]any{}})
	if err := send(out, call); err != nil {
		return err
	}
	results := make(chan *jsonrpc.Response, 1)
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			f = append([]byte(nil), f...) // messages outlive the reader's buffer
			p, err := chosen.Decode(f)
			if err != nil {
				p, err = enc.Decode(f) // a -32003 may come back in JSON
				if err != nil {
					continue
				}
			}
			msgs, _ := jsonrpc.Validate(p)
			for _, m := range msgs {
				switch m := m.(type) {
				case *jsonrpc.Response:
					if m.ID == id || m.ID.IsNull() {
						results <- m
					}
				case *jsonrpc.Request:
					if m.IsCall() && fault != "no-ping" {
						var r *jsonrpc.Response
						if m.Method == protocol.MethodPing {
							r = &jsonrpc.Response{ID: m.ID, Result: json.RawMessage("{}")}
						} else {
							r = jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, m.Method))
						}
						_ = send(out, r)
					}
				}
			}
		}
	}()
	var res *jsonrpc.Response
	select {
	case res = <-results:
	case err := <-badDatagram:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
	if res.Error != nil {
		return fmt.Errorf("tools/call: %d %s", res.Error.Code, res.Error.Message)
	}
	var content struct {
		Content []struct {
			Type string `json:"type"`
		}
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res.Result, &content); err != nil {
		return fmt.Errorf("tools/call result: %w", err)
	}
	if content.IsError {
		return fmt.Errorf("tools/call: the tool failed: %s", res.Result)
	}
	read := 0
	defer func() { fmt.Fprintf(os.Stderr, "faultyclient: result %.200s; %d streams read\n", res.Result, read) }()
	for _, c := range content.Content {
		if c.Type != protocol.ContentTypeRef || fault == "skip-stream" {
			continue
		}
		var rs *webtransport.ReceiveStream
		select {
		case rs = <-streams:
		case <-time.After(3 * time.Second):
			return fmt.Errorf("no execution stream arrived for a ref/stream (-32001)")
		}
		// A reset may come before the header is read (QUIC may discard
		// the unread bytes of a reset stream, RFC 9000 §3.2): the fault
		// ignores it there too.
		_, err := wire.ReadStreamHeader(rs)
		if err == nil {
			_, err = io.Copy(io.Discard, rs)
		}
		if err != nil && fault != "accept-truncated" {
			return fmt.Errorf("execution stream failed: %w", err)
		}
		read++
	}
	if fault == "no-fin" {
		fmt.Fprintf(os.Stderr, "faultyclient: result %.200s; %d streams read\n", res.Result, read)
		os.Exit(0)
	}
	sd, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodShutdown, nil)
	_ = send(out, sd)
	_ = ctrl.Close()
	select {
	case <-eof:
	case <-time.After(3 * time.Second):
	}
	select {
	case <-sess.Context().Done():
	case <-time.After(3 * time.Second):
	}
	select {
	case err := <-badDatagram:
		return err
	default:
	}
	return nil
}
