package flow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/wire"
)

// TestMisbehavingClients has a raw peer break each rule on purpose and checks
// the code it gets back, while a well-behaved session on the same server
// carries on unaffected.
func TestMisbehavingClients(t *testing.T) {
	srv := startServer(t, nil)
	good := dial(t, srv, func(c *flow.ClientConfig) { c.Encodings = []codec.Name{codec.CBOR} })
	stop := make(chan struct{})
	var calls atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			want := fmt.Sprintf("call %d", i)
			r, err := good.Call(context.Background(), "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": want}})
			if err != nil {
				t.Errorf("good session failed: %v", err)
				return
			}
			if got := textOf(t, r); got != want {
				t.Errorf("good session: %q, want %q", got, want)
				return
			}
			calls.Add(1)
		}
	})
	defer func() {
		close(stop)
		wg.Wait()
		if calls.Load() == 0 {
			t.Error("the good session completed no call")
		}
	}()

	t.Run("request before initialize", func(t *testing.T) {
		p, _, err := dialRaw(t, srv, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.write(frame(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		expectError(t, p.read(), `1`, jsonrpc.CodeInvalidRequest)
		p.write(frame(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
		if got := string(p.read()); got != `{"jsonrpc":"2.0","id":2,"result":{}}` {
			t.Fatalf("ping before initialize: %s", got)
		}
	})
	t.Run("initialize not in JSON", func(t *testing.T) {
		p, _, err := dialRaw(t, srv, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := codec.Default(codec.CBOR).Append(nil, &jsonrpc.Request{ID: jsonrpc.Int64ID(3), Method: "initialize", Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}`)})
		if err != nil {
			t.Fatal(err)
		}
		p.write(wire.AppendFrame(nil, b))
		expectError(t, p.read(), `3`, jsonrpc.CodeEncodingMismatch)
	})
	t.Run("zero length", func(t *testing.T) {
		p := initRaw(t, srv)
		p.write([]byte{0, 0, 0, 0})
		expectError(t, p.read(), `null`, jsonrpc.CodeInvalidRequest)
		p.write(frame(`{"jsonrpc":"2.0","id":5,"method":"ping"}`))
		if got := string(p.read()); got != `{"jsonrpc":"2.0","id":5,"result":{}}` {
			t.Fatalf("session did not survive a zero-length frame: %s", got)
		}
	})
	t.Run("malformed JSON", func(t *testing.T) {
		p := initRaw(t, srv)
		p.write(frame(`{"jsonrpc":"2.0","id":5,"method":`))
		expectError(t, p.read(), `null`, jsonrpc.CodeParseError)
		p.write(frame(`{"jsonrpc":"2.0","id":6,"method":"ping"}`))
		if got := string(p.read()); got != `{"jsonrpc":"2.0","id":6,"result":{}}` {
			t.Fatalf("session did not survive: %s", got)
		}
	})
	t.Run("wrong encoding", func(t *testing.T) {
		p := initRaw(t, srv) // negotiated json
		b, err := codec.Default(codec.CBOR).Append(nil, &jsonrpc.Request{ID: jsonrpc.Int64ID(8), Method: "ping"})
		if err != nil {
			t.Fatal(err)
		}
		p.write(wire.AppendFrame(nil, b))
		expectError(t, p.read(), `8`, jsonrpc.CodeEncodingMismatch)
	})
	t.Run("4 GiB length", func(t *testing.T) {
		p := initRaw(t, srv)
		p.write([]byte{0xFF, 0xFF, 0xFF, 0xFF, '{'})
		expectError(t, p.read(), `null`, jsonrpc.CodeInvalidRequest)
		// The control stream cannot be resynchronised: the session ends.
		p.ctrl.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := p.ctrl.Read(make([]byte, 1)); err == nil {
			t.Fatal("session still open after a 4 GiB frame")
		}
	})
	t.Run("stream header naming no request", func(t *testing.T) {
		p := initRaw(t, srv)
		st, err := p.sess.OpenUniStreamSync(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		st.Write(wire.StreamHeader{RequestID: 999, StreamTag: 1}.Append(nil))
		st.Write([]byte("injected payload"))
		st.Close()
		expectError(t, p.read(), `null`, jsonrpc.CodeStreamInjection)
		p.write(frame(`{"jsonrpc":"2.0","id":9,"method":"ping"}`))
		if got := string(p.read()); got != `{"jsonrpc":"2.0","id":9,"result":{}}` {
			t.Fatalf("session did not survive: %s", got)
		}
	})
	t.Run("datagram when unsupported", func(t *testing.T) {
		// A client that refuses datagrams (this project's datagrams: false).
		p := initRawWith(t, srv, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"},"transport":{"type":"mcp-flow","version":"0.1","encodings":["json"],"datagrams":false}}}`)
		d := wire.DatagramHeader{Channel: wire.ChannelProgress, RequestID: 1}.Append(nil)
		d = append(d, `{"progress":1}`...)
		if err := p.sess.SendDatagram(d); err != nil {
			t.Fatal(err)
		}
		expectError(t, p.read(), `null`, jsonrpc.CodeDatagramsNotSupported)
	})
	t.Run("batch rules", func(t *testing.T) {
		p := initRaw(t, srv)
		p.write(frame(`[]`))
		expectError(t, p.read(), `null`, jsonrpc.CodeInvalidRequest)
		p.write(frame(`[{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}]`))
		p.write(frame(`[{"jsonrpc":"2.0","id":1,"method":"ping"},1,{"jsonrpc":"2.0","id":2,"method":"ping"}]`))
		var replies []json.RawMessage
		if err := json.Unmarshal(p.read(), &replies); err != nil || len(replies) != 3 {
			t.Fatalf("batch reply: %v, %d replies", err, len(replies))
		}
	})
}

func TestOriginAllowList(t *testing.T) {
	srv := startServer(t, func(c *flow.ServerConfig) { c.AllowedOrigins = []string{"https://good.example"} })
	_, resp, err := dialRaw(t, srv, http.Header{"Origin": {"https://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("bad origin: resp %v, err %v; want 403", resp, err)
	}
	if _, _, err := dialRaw(t, srv, http.Header{"Origin": {"https://good.example"}}); err != nil {
		t.Fatalf("good origin refused: %v", err)
	}
	if _, _, err := dialRaw(t, srv, nil); err != nil {
		t.Fatalf("no origin refused: %v", err)
	}
}
