package flow_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcp-flow/mcp-flow/flow"
)

// TestClientTransportWithinSchema: the client's transport object holds only
// the members the published v0.1 schema's ClientTransportCapabilities allows
// (it has additionalProperties: false), except datagrams: false when the
// client refuses datagrams (spec §4.1).
func TestClientTransportWithinSchema(t *testing.T) {
	for _, disable := range []bool{false, true} {
		got := make(chan json.RawMessage, 1)
		srv := startServer(t, func(c *flow.ServerConfig) {
			c.OnInitialize = func(_ context.Context, _ *flow.Session, params json.RawMessage) (*flow.InitializeResult, error) {
				var p struct{ Transport json.RawMessage }
				_ = json.Unmarshal(params, &p)
				got <- p.Transport
				return &flow.InitializeResult{ProtocolVersion: "2025-11-25", Capabilities: json.RawMessage(`{}`), ServerInfo: flow.Implementation{Name: "s", Version: "1"}}, nil
			}
		})
		s := dial(t, srv, func(c *flow.ClientConfig) { c.DisableDatagrams = disable })
		raw := <-got
		var members map[string]json.RawMessage
		if err := json.Unmarshal(raw, &members); err != nil {
			t.Fatalf("transport %s: %v", raw, err)
		}
		for k := range members {
			if !slices.Contains([]string{"type", "version", "encodings"}, k) && !(disable && k == "datagrams") {
				t.Errorf("DisableDatagrams=%v: transport %s has %q, which the v0.1 schema does not allow", disable, raw, k)
			}
		}
		if d, ok := members["datagrams"]; disable && (!ok || string(d) != "false") {
			t.Errorf("DisableDatagrams: transport %s lacks datagrams: false", raw)
		}
		if s.DatagramsEnabled() == disable {
			t.Errorf("DisableDatagrams=%v: DatagramsEnabled %v", disable, s.DatagramsEnabled())
		}
	}
}

// TestNotificationWithID: the published v0.1 example client sends
// notifications/initialized with "id":0. The server takes it as the
// notification it names and answers nothing, so that the next frame the
// client reads is the answer to its next request (spec §2).
func TestNotificationWithID(t *testing.T) {
	srv := startServer(t, nil)
	p, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.write(frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"v0.1-like","version":"0"},"transport":{"type":"mcp-flow","version":"0.1","encodings":["json"]}}}`))
	p.read()
	p.write(frame(`{"jsonrpc":"2.0","id":0,"method":"notifications/initialized"}`))
	p.write(frame(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	// Read until the answer to a ping sent after the answer to tools/list:
	// nothing may answer id 0 meanwhile.
	var ids []string
	for pinged := false; ; {
		var got struct{ ID json.RawMessage }
		b := p.read()
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		ids = append(ids, string(got.ID))
		if string(got.ID) == "2" && !pinged {
			p.write(frame(`{"jsonrpc":"2.0","id":3,"method":"ping"}`))
			pinged = true
		}
		if string(got.ID) == "3" {
			break
		}
	}
	if !slices.Equal(ids, []string{"2", "3"}) {
		t.Fatalf("answers to ids %v, want [2 3]: notifications/initialized with an id was answered", ids)
	}
}
