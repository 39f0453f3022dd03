package flow

import (
	"testing"
	"time"
)

// One QUIC handshake attempt is bounded by 5-10 s whatever HandshakeTimeout
// is (spec §10): the CLI's 65 s bounds the wait for initialize, not a
// reconnection's unanswered Initial.
func TestQUICHandshakeIdle(t *testing.T) {
	for _, c := range []struct{ handshake, want time.Duration }{
		{0, 10 * time.Second}, // the default HandshakeTimeout, 10 s
		{1 * time.Second, 5 * time.Second},
		{7 * time.Second, 7 * time.Second},
		{65 * time.Second, 10 * time.Second},
	} {
		l := Limits{HandshakeTimeout: c.handshake}.withDefaults()
		if got := l.quicHandshakeIdle(); got != c.want {
			t.Errorf("HandshakeTimeout %v: quicHandshakeIdle %v, want %v", c.handshake, got, c.want)
		}
		if got := l.quicConfig().HandshakeIdleTimeout; got != c.want {
			t.Errorf("HandshakeTimeout %v: quic.Config.HandshakeIdleTimeout %v, want %v", c.handshake, got, c.want)
		}
	}
}
