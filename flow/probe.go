package flow

import (
	"context"
	"sync/atomic"
	"time"
)

// watchWaiting makes a client session that waits on answers probe its
// server (spec §8, the limits table, "liveness while waiting"): every
// KeepAlivePeriod, when requests of its own are unanswered and no control
// frame has passed either way for KeepAlivePeriod, it sends a ping. A
// waiting client otherwise sends only ACKs and QUIC PINGs, packets too
// small for a stateless reset (quic-go answers none to a packet of 42
// bytes or less; RFC 9000 §10.3 wants a reset smaller than what triggered
// it): a server of its fleet that took the address of a killed one could
// not tell it, and it would learn only from PeerIdleTimeout. The ping is
// larger, so the new server resets the connection and the session ends
// within KeepAlivePeriod and a round trip. A live server answers it (flow
// answers ping itself, in both eras). One probe at a time, checked by
// every.
func (s *Session) watchWaiting() {
	period := s.lim.KeepAlivePeriod
	if period <= 0 {
		return
	}
	var probing atomic.Bool
	s.every(period, func() bool {
		s.mu.Lock()
		waiting := len(s.calls) > 0
		s.mu.Unlock()
		if waiting && time.Since(time.Unix(0, s.touched.Load())) >= period && probing.CompareAndSwap(false, true) {
			s.probes.Add(1)
			go func() {
				defer probing.Store(false)
				ctx, cancel := context.WithTimeout(s.ctx, s.lim.PeerIdleTimeout)
				defer cancel()
				_ = s.Ping(ctx) // its answer or its failure: the session's own end says the rest
			}()
		}
		return true
	})
}

// Probes is how many liveness pings the session sent while it waited on
// answers (watchWaiting).
func (s *Session) Probes() int64 { return s.probes.Load() }
