package flow_test

import (
	"encoding/json"
	"testing"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/wire"
)

// guideInitialize is the initialize of a client that follows only the guide
// and the published schema: its transport object has no datagrams field.
const guideInitialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"guide-only","version":"0"},"transport":{"type":"mcp-flow","version":"0.1","encodings":["json"]}}}`

// TestDatagramDuringInitialize: datagrams that arrive while initialize is
// being answered are read by one goroutine while the handshake publishes its
// results on another (spec §4, §6). Under -race this reported a data race on
// the handshake's fields; the session must also come out READY.
func TestDatagramDuringInitialize(t *testing.T) {
	srv := startServer(t, nil)
	for range 3 {
		p, _, err := dialRaw(t, srv, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.write(frame(guideInitialize))
		d := wire.DatagramHeader{Channel: wire.ChannelProgress, RequestID: 7}.Append(nil)
		d = append(d, `{"progressToken":7,"progress":1}`...)
		// Several, so that some land while initialize is being handled.
		for range 20 {
			if err := p.sess.SendDatagram(d); err != nil {
				t.Fatal(err)
			}
		}
		// Before READY a datagram is answered -32004 with id null (at most
		// once a second); the initialize result must come all the same.
		b := p.readSkipping(jsonrpc.CodeDatagramsNotSupported)
		var r struct{ Result *flow.InitializeResult }
		if err := json.Unmarshal(b, &r); err != nil || r.Result == nil || !r.Result.Transport.DatagramsSupported {
			t.Fatalf("initialize answered %s (%v)", b, err)
		}
		p.write(frame(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		p.write(frame(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if got := string(p.readSkipping(jsonrpc.CodeDatagramsNotSupported)); got != `{"jsonrpc":"2.0","id":1,"result":{}}` {
			t.Fatalf("ping after initialize: %s", got)
		}
		p.sess.CloseWithError(0, "")
		<-p.sess.Context().Done()
	}
}

// readSkipping reads the next frame that is not an error with id null and
// the given code.
func (p *rawPeer) readSkipping(code jsonrpc.Code) []byte {
	p.t.Helper()
	for {
		b := p.read()
		var r struct {
			ID    json.RawMessage
			Error *jsonrpc.Error
		}
		if json.Unmarshal(b, &r) == nil && r.Error != nil && string(r.ID) == "null" && r.Error.Code == code {
			continue
		}
		return b
	}
}
