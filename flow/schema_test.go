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
