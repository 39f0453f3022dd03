package flow_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

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

// initRawWith dials a raw peer and initializes it with the given initialize
// message (JSON encoding).
func initRawWith(t *testing.T, srv *flow.Server, initialize string) *rawPeer {
	t.Helper()
	p, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.write(frame(initialize))
	var r struct{ Result *flow.InitializeResult }
	if b := p.read(); json.Unmarshal(b, &r) != nil || r.Result == nil {
		t.Fatalf("initialize answered %s", b)
	}
	p.write(frame(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	return p
}

// TestGuideClientGetsProgressDatagrams: a client that follows only the guide
// (no datagrams field) gets progress as datagrams when the server announces
// datagramsSupported: true (spec §6): channel 1, flags 0, the request's id,
// the params of notifications/progress as payload.
func TestGuideClientGetsProgressDatagrams(t *testing.T) {
	got := make(chan struct{})
	srv := customServer(t, flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		// Datagrams may be lost: send a newer update until one arrives.
		for i := 1; ; i++ {
			if err := req.Progress(float64(i), 0, ""); err != nil {
				return nil, err
			}
			select {
			case <-got:
				return map[string]int{"updates": i}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-tick.C:
			}
		}
	}), nil)
	p := initRawWith(t, srv, guideInitialize)
	p.write(frame(`{"jsonrpc":"2.0","id":5,"method":"work","params":{"_meta":{"progressToken":"tok"}}}`))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := p.sess.ReceiveDatagram(ctx)
	if err != nil {
		t.Fatalf("no progress datagram: %v", err)
	}
	close(got)
	h, payload, err := wire.ParseDatagram(b)
	if err != nil {
		t.Fatal(err)
	}
	var pr flow.Progress
	if h.Channel != wire.ChannelProgress || h.RequestID != 5 || json.Unmarshal(payload, &pr) != nil || string(pr.ProgressToken) != `"tok"` || pr.Progress < 1 {
		t.Fatalf("datagram %+v %s", h, payload)
	}
	// The result follows on the control stream (after, possibly, the
	// newest progress value: TestProgressBurst).
	for {
		var m struct {
			ID     json.RawMessage
			Method string
			Result json.RawMessage
		}
		b := p.read()
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Method == flow.MethodProgress {
			continue
		}
		if string(m.ID) != "5" || m.Result == nil {
			t.Fatalf("want the result of 5, got %s", b)
		}
		break
	}
}
