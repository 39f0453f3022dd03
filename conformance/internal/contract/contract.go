// Package contract is what the conformance runner's hand-written test
// clients (guideclient, faultyclient) do alike under the client contract of
// package conformance: dial MCP_FLOW_URL trusting MCP_FLOW_CERT_HASH, open
// the control stream, initialize, call the tool "scenario", answer the
// server's requests. Each client keeps here only what the guide says every
// client does; what sets one apart (its faults, its checks) stays in it.
package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// Conn is a session dialled under the contract, with its control stream.
// Send may be called from any goroutine; ReadMessages from one at a time.
type Conn struct {
	Sess *webtransport.Session
	Ctrl *webtransport.Stream

	tr     *webtransport.Transport
	frames *wire.FrameReader
	wmu    sync.Mutex
}

// Dial opens a session to MCP_FLOW_URL, trusting the certificate whose hex
// SHA-256 is MCP_FLOW_CERT_HASH, with datagrams, and its control stream.
func Dial(ctx context.Context) (*Conn, error) {
	h, err := certs.ParseHash(os.Getenv("MCP_FLOW_CERT_HASH"))
	if err != nil {
		return nil, err
	}
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{h}})
	tr := &webtransport.Transport{TLSClientConfig: tlsConf, QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true, Tracer: qlogdir.Tracer()}}
	_, sess, err := tr.Dial(ctx, os.Getenv("MCP_FLOW_URL"), nil)
	if err != nil {
		_ = tr.Close()
		return nil, err
	}
	ctrl, err := sess.OpenStreamSync(ctx)
	if err != nil {
		_ = tr.Close()
		return nil, err
	}
	return &Conn{Sess: sess, Ctrl: ctrl, tr: tr, frames: wire.NewFrameReader(ctrl, wire.DefaultMaxFrameSize)}, nil
}

// Close stops what the transport is still establishing; the session ends
// by its own close (Sess.CloseWithError).
func (c *Conn) Close() { _ = c.tr.Close() }

// Send writes m as one frame encoded by enc.
func (c *Conn) Send(enc codec.Codec, m jsonrpc.Message) error {
	b, err := enc.Append(nil, m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.Ctrl.Write(wire.AppendFrame(nil, b))
	return err
}

// Negotiated is what the server's initialize result chose (guide §3).
type Negotiated struct {
	Codec     codec.Codec // the encoding of every later frame
	Datagrams bool        // datagramsSupported
}

// Initialize sends initialize in JSON with id 1, offering cbor then json and
// no datagrams field (the published schema has none), and reads its result.
func (c *Conn) Initialize(protocolVersion, name string) (Negotiated, error) {
	req, _ := jsonrpc.NewRequest(jsonrpc.Int64ID(1), protocol.MethodInitialize, map[string]any{
		"protocolVersion": protocolVersion, "capabilities": map[string]any{}, "clientInfo": map[string]string{"name": name, "version": "1.0"},
		"transport": map[string]any{"type": protocol.TransportType, "version": protocol.Version, "encodings": []string{protocol.EncodingCBOR, protocol.EncodingJSON}}})
	if err := c.Send(codec.Default(codec.JSON), req); err != nil {
		return Negotiated{}, err
	}
	f, err := c.frames.ReadFrame()
	if err != nil {
		return Negotiated{}, fmt.Errorf("initialize: %w", err)
	}
	var init struct {
		Result struct {
			Transport struct {
				Encoding           codec.Name `json:"encoding"`
				DatagramsSupported bool       `json:"datagramsSupported"`
			} `json:"transport"`
		} `json:"result"`
	}
	if err := json.Unmarshal(f, &init); err != nil {
		return Negotiated{}, fmt.Errorf("initialize result: %w", err)
	}
	enc, err := codec.New(init.Result.Transport.Encoding, codec.DefaultLimits())
	if err != nil {
		return Negotiated{}, fmt.Errorf("initialize result: %w", err)
	}
	return Negotiated{Codec: enc, Datagrams: init.Result.Transport.DatagramsSupported}, nil
}

// Streams hands over the session's unidirectional streams as they come,
// until ctx or the session ends.
func (c *Conn) Streams(ctx context.Context) <-chan *webtransport.ReceiveStream {
	streams := make(chan *webtransport.ReceiveStream, 8)
	go func() {
		for {
			rs, err := c.Sess.AcceptUniStream(ctx)
			if err != nil {
				return
			}
			streams <- rs
		}
	}()
	return streams
}

// ReadMessages returns the messages of the next control frame that one of
// encs decodes, tried in order; frames none decodes are skipped. The
// messages own their bytes. Its error is the control stream's.
func (c *Conn) ReadMessages(encs ...codec.Codec) ([]jsonrpc.Message, error) {
	for {
		f, err := c.frames.ReadFrame()
		if err != nil {
			return nil, err
		}
		f = append([]byte(nil), f...) // the reader's buffer is reused
		for _, enc := range encs {
			if p, err := enc.Decode(f); err == nil {
				msgs, _ := jsonrpc.Validate(p)
				return msgs, nil
			}
		}
	}
}

// Call is the contract's call: tools/call of the tool "scenario" with no
// arguments.
func Call(id jsonrpc.ID) *jsonrpc.Request {
	r, _ := jsonrpc.NewRequest(id, "tools/call", map[string]any{"name": "scenario", "arguments": map[string]any{}})
	return r
}

// Answer is a client's answer to a request of the server: an empty result
// to ping, -32601 to any other.
func Answer(req *jsonrpc.Request) *jsonrpc.Response {
	if req.Method == protocol.MethodPing {
		return &jsonrpc.Response{ID: req.ID, Result: json.RawMessage("{}")}
	}
	return jsonrpc.NewErrorResponse(req.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, req.Method))
}

// StreamTags returns the stream tags of the ref/stream blocks of the call's
// result (guide §5), in order; an error answer or a tool error (isError) is
// an error.
func StreamTags(res *jsonrpc.Response) ([]uint32, error) {
	if res.Error != nil {
		return nil, fmt.Errorf("tools/call: %d %s", res.Error.Code, res.Error.Message)
	}
	var r struct {
		Content []struct {
			Type      string `json:"type"`
			StreamTag uint32 `json:"streamTag"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res.Result, &r); err != nil {
		return nil, fmt.Errorf("tools/call result: %w", err)
	}
	if r.IsError {
		return nil, fmt.Errorf("tools/call: the tool failed: %s", res.Result)
	}
	var tags []uint32
	for _, c := range r.Content {
		if c.Type == protocol.ContentTypeRef {
			tags = append(tags, c.StreamTag)
		}
	}
	return tags, nil
}
