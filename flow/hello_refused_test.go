package flow_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// TestHelloAfterRefusedHello: once a session's first $/hello is refused
// (an unknown transport type, params that are not a transport), a later
// $/hello is -32600 too, however good (spec §11.4: a second $/hello is
// -32600), and says why; the session survives and falls back to a guide
// initialize, as a client of a guide-only server does. A refused
// initialize is followed by no $/hello either.
func TestHelloAfterRefusedHello(t *testing.T) {
	const good = `{"jsonrpc":"2.0","id":2,"method":"$/hello","params":{"transport":{"type":"mcp-flow","version":"0.2","encodings":["cbor","json"]}}}`
	srv := startServer(t, nil)
	for name, first := range map[string]struct {
		frame string
		code  jsonrpc.Code
	}{
		"unknown type": {`{"jsonrpc":"2.0","id":1,"method":"$/hello","params":{"transport":{"type":"other","version":"0.2","encodings":["json"]}}}`, jsonrpc.CodeInvalidRequest},
		"bad params":   {`{"jsonrpc":"2.0","id":1,"method":"$/hello","params":{"transport":"mcp-flow"}}`, jsonrpc.CodeInvalidParams},
		"no encoding":  {`{"jsonrpc":"2.0","id":1,"method":"$/hello","params":{"transport":{"type":"mcp-flow","version":"0.2","encodings":["nope"]}}}`, jsonrpc.CodeInvalidParams},
		"initialize":   {`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"},"transport":{"type":"other"}}}`, jsonrpc.CodeInvalidRequest},
	} {
		t.Run(name, func(t *testing.T) {
			p, _, err := dialRaw(t, srv, nil)
			if err != nil {
				t.Fatal(err)
			}
			p.write(frame(first.frame))
			expectError(t, p.read(), `1`, first.code)
			p.write(frame(good))
			b := p.read()
			expectError(t, b, `2`, jsonrpc.CodeInvalidRequest)
			if !strings.Contains(string(b), "already refused") {
				t.Errorf("the second $/hello's error says %s, want that one was already refused", b)
			}
			// Still JSON, still alive: the guide's initialize.
			p.write(frame(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"},"transport":{"type":"mcp-flow","version":"0.1","encodings":["json"]}}}`))
			var r struct {
				ID     json.RawMessage
				Result struct{ Transport struct{ Encoding string } }
				Error  *jsonrpc.Error
			}
			if b := p.read(); json.Unmarshal(b, &r) != nil || string(r.ID) != "3" || r.Error != nil || r.Result.Transport.Encoding != "json" {
				t.Fatalf("initialize after the refused $/hello: %s, want its result in json", b)
			}
			p.write(frame(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			p.write(frame(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`))
			if b := p.read(); !strings.Contains(string(b), `"id":4`) || !strings.Contains(string(b), `"echo"`) {
				t.Fatalf("tools/list after the fallback: %s", b)
			}
		})
	}
}
