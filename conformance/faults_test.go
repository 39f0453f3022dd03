package conformance

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/faults"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestEachFaultIsCaught breaks one rule at a time in our server and checks
// that exactly the checks meant for that rule fail: the runner can fail, and
// it blames the right rule.
func TestEachFaultIsCaught(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		faults faults.Faults
		want   []string
	}{
		{"stream header byte order", faults.Faults{StreamHeaderLittleEndian: true}, []string{"stream.header"}},
		{"no encoding switch", faults.Faults{NoEncodingSwitch: true}, []string{"negotiate.cbor", "negotiate.protobuf"}},
		{"cancel answered -32000", faults.Faults{CancelCode32000: true}, []string{"cancel.code"}},
		{"no Origin check", faults.Faults{NoOriginCheck: true}, []string{"origin", "origin.403"}},
		{"truncated stream without $/streamError", faults.Faults{TruncateWithoutStreamError: true}, []string{"stream.error", "stream.error-reset"}},
		{"no drain on shutdown", faults.Faults{NoDrainOnShutdown: true}, []string{"shutdown.drain", "shutdown.fin", "shutdown.refuse-new"}},
		{"no injection check", faults.Faults{NoInjectionCheck: true}, []string{"stream.injection", "stream.injection-report"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := flow.ServerConfig{Logger: flowtest.Quiet}
			faults.Set(&cfg, tc.faults)
			srv := flowtest.Serve(t, cfg)
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
