package conformance

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestEachFaultIsCaught breaks one rule at a time in our server and checks
// that exactly the checks meant for that rule fail: the runner can fail, and
// it blames the right rule.
func TestEachFaultIsCaught(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults flow.Faults
		want   []string
	}{
		{"stream header byte order", flow.Faults{StreamHeaderLittleEndian: true}, []string{"stream.header"}},
		{"no encoding switch", flow.Faults{NoEncodingSwitch: true}, []string{"negotiate.cbor", "negotiate.protobuf"}},
		{"cancel answered -32000", flow.Faults{CancelCode32000: true}, []string{"cancel.code"}},
		{"no Origin check", flow.Faults{NoOriginCheck: true}, []string{"origin", "origin.403"}},
		{"truncated stream without $/streamError", flow.Faults{TruncateWithoutStreamError: true}, []string{"stream.error", "stream.error-reset"}},
		{"no drain on shutdown", flow.Faults{NoDrainOnShutdown: true}, []string{"shutdown.drain", "shutdown.fin", "shutdown.refuse-new"}},
		{"no injection check", flow.Faults{NoInjectionCheck: true}, []string{"stream.injection", "stream.injection-report"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet, Faults: tc.faults})
			rs := RunServer(context.Background(), Target{URL: srv.URL(), TLS: flowtest.ClientTLS(t)}, ServerChecks(), Options{CheckTimeout: 5 * time.Second})
			var failed []string
			for _, r := range rs {
				if r.Status == Fail {
					failed = append(failed, r.ID)
				}
			}
			sort.Strings(failed)
			if !slices.Equal(failed, tc.want) {
				for _, r := range rs {
					if r.Status == Fail {
						t.Logf("%s: %s", r.ID, r.Seen)
					}
				}
				t.Fatalf("failed checks %v, want exactly %v", failed, tc.want)
			}
		})
	}
}
