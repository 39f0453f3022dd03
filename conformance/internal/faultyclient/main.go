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
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/conformance/internal/contract"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
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
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := contract.Dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	sess, send := conn.Sess, conn.Send
	neg, err := conn.Initialize(protocol.MCPLatest, "faultyclient")
	if err != nil {
		return err
	}
	enc := codec.Default(codec.JSON)
	chosen := neg.Codec
	out := chosen
	if fault == "no-switch" {
		out = enc
	}
	n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodInitialized, nil)
	_ = send(out, n)

	// Execution streams, in the order they come.
	streams := conn.Streams(ctx)

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
	if err := send(out, contract.Call(id)); err != nil {
		return err
	}
	results := make(chan *jsonrpc.Response, 1)
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		for {
			msgs, err := conn.ReadMessages(chosen, enc) // a -32003 may come back in JSON
			if err != nil {
				return
			}
			for _, m := range msgs {
				switch m := m.(type) {
				case *jsonrpc.Response:
					if m.ID == id || m.ID.IsNull() {
						results <- m
					}
				case *jsonrpc.Request:
					if m.IsCall() && fault != "no-ping" {
						_ = send(out, contract.Answer(m))
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
	tags, err := contract.StreamTags(res)
	if err != nil {
		return err
	}
	read := 0
	defer func() { fmt.Fprintf(os.Stderr, "faultyclient: result %.200s; %d streams read\n", res.Result, read) }()
	if fault == "skip-stream" {
		tags = nil
	}
	for range tags {
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
	_ = conn.Ctrl.Close()
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
