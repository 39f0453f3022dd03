package flow_test

import (
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
)

// TestKeepAliveKeepsQuietSession: with a 1.5 s QUIC idle timeout, a session
// with no traffic at all lives on while either side sends keep-alives, and
// ends soon after the timeout when neither does (spec §8,
// Limits.KeepAlivePeriod).
func TestKeepAliveKeepsQuietSession(t *testing.T) {
	const idle = 1500 * time.Millisecond // ten keep-alives of 150 ms: a stall of the loaded machine does not end a live session
	for _, tc := range []struct {
		name           string
		server, client time.Duration // keep-alive periods
		wantAlive      bool
	}{
		{"client keep-alive", -1, 150 * time.Millisecond, true},
		{"server keep-alive", 150 * time.Millisecond, -1, true},
		{"none", -1, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startServer(t, func(c *flow.ServerConfig) {
				c.Limits.PeerIdleTimeout, c.Limits.KeepAlivePeriod = idle, tc.server
			})
			s := dial(t, srv, func(c *flow.ClientConfig) {
				c.Limits.PeerIdleTimeout, c.Limits.KeepAlivePeriod = idle, tc.client
			})
			start := time.Now()
			quiet := time.NewTimer(4 * idle)
			defer quiet.Stop()
			select {
			case <-s.Done():
				took := time.Since(start)
				if tc.wantAlive {
					t.Fatalf("the quiet session ended after %v in spite of keep-alives: %v", took, s.Err())
				}
				if took < idle/2 {
					t.Errorf("the quiet session ended after %v, before the idle timeout of %v: %v", took, idle, s.Err())
				}
				t.Logf("quiet session without keep-alive ended after %v: %v", took, s.Err())
			case <-quiet.C:
				if !tc.wantAlive {
					t.Fatalf("a session without keep-alive outlived %v of silence (idle timeout %v)", 4*idle, idle)
				}
				if err := s.Ping(t.Context()); err != nil {
					t.Fatalf("ping after %v of silence: %v", 4*idle, err)
				}
			}
		})
	}
}
