package core

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
)

// A 2026-07-28 client's MCP-Flow session (spec §11.6): dialled on its
// first request, and again on the next request after it was lost.

// statelessSession returns the core's 2026-07-28 MCP-Flow session, dialling
// it when there is none (or when the one there drains); one dial at a time,
// which the other requests wait for. Unless ExitOnDisconnect, a failed dial
// is tried again, after ReconnectMin doubling up to ReconnectMax, for up to
// ReconnectWait (spec §10: a server restarting behind a balancer answers
// again soon); then the request fails with a *ServerLostError that says it
// was not sent.
func (b *Core) statelessSession(ctx context.Context) (*flow.Session, error) {
	var (
		deadline *time.Timer // ReconnectWait from this request's first failed dial
		delay    = b.cfg.ReconnectMin
	)
	defer func() {
		if deadline != nil {
			deadline.Stop()
		}
	}()
	// again waits before the next dial; a *ServerLostError when
	// ReconnectWait has passed since the first failure.
	again := func(err error) error {
		if !b.Reconnects() || isRefusal(err) {
			return &ServerLostError{URL: b.cfg.URL, Err: err, NotSent: true}
		}
		if deadline == nil {
			deadline = time.NewTimer(b.cfg.ReconnectWait)
		}
		t := time.NewTimer(delay)
		defer t.Stop()
		delay = min(2*delay, b.cfg.ReconnectMax)
		select {
		case <-t.C:
			return nil
		case <-deadline.C:
			return &ServerLostError{URL: b.cfg.URL, Err: err, Waited: b.cfg.ReconnectWait, NotSent: true}
		case <-b.stop.Done():
			return &ServerLostError{URL: b.cfg.URL, Err: err, NotSent: true}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		b.mu.Lock()
		if s := b.sess; s != nil && s.Err() == nil && s.State() == flow.StateReady {
			b.mu.Unlock()
			return s, nil
		}
		if b.closing {
			err := b.lostErr
			b.mu.Unlock()
			return nil, &ServerLostError{URL: b.cfg.URL, Err: err, NotSent: true}
		}
		if d := b.dialing; d != nil {
			b.mu.Unlock()
			select {
			case <-d:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			b.mu.Lock()
			err := b.dialErr
			b.mu.Unlock()
			if err != nil {
				if err := again(err); err != nil {
					return nil, err
				}
			}
			continue
		}
		d := make(chan struct{})
		b.dialing = d
		b.mu.Unlock()
		// The dial is the core's, not the request's: a client that goes
		// away does not fail it for the others waiting.
		s, err := b.dial(b.stop, flow.InitializeParams{})
		b.mu.Lock()
		b.dialing, b.dialErr = nil, err
		if err == nil && b.closing {
			err = fmt.Errorf("the bridge is closing")
			b.dialErr = err
			b.mu.Unlock()
			close(d)
			s.Close()
			return nil, &ServerLostError{URL: b.cfg.URL, Err: err, NotSent: true}
		}
		if err == nil {
			b.lostErr = nil
			b.setSessionLocked(s)
		} else {
			b.lostErr = err
		}
		b.mu.Unlock()
		close(d)
		if err != nil {
			if _, gaveUp := b.unreachable(err); gaveUp || isRefusal(err) {
				// Not tried again for this request: the token source has
				// no other token now (the next request dials again), or
				// the stdio front gives up (ExitIfUnreachable).
				return nil, &ServerLostError{URL: b.cfg.URL, Err: err, NotSent: true}
			}
			if err := again(err); err != nil {
				return nil, err
			}
			continue
		}
		b.watch(s)
		return s, nil
	}
}
