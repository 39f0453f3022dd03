package flow

import (
	"sync"
	"time"
)

// reportLimiter lets at most one report a second through (spec §6, §8):
// the error replies and log lines that a peer triggers without sending a
// control frame (a datagram where none are supported, an execution stream
// it may not open). Each costs the peer a few bytes and a report costs this
// side a frame and a log line, so a flood of them must not be answered in
// kind. One per session, shared by every such report.
type reportLimiter struct {
	mu   sync.Mutex
	last time.Time
	held int // reports held back since the last one let through
}

// reportEvery is how often a reportLimiter lets a report through.
const reportEvery = time.Second

// allow reports whether a report may go now and, if so, how many were held
// back since the last one that went.
func (l *reportLimiter) allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < reportEvery {
		l.held++
		return false, 0
	}
	held := l.held
	l.last, l.held = now, 0
	return true, held
}

// heldNote is the words a report adds about the reports held back before it.
func heldNote(held int) string {
	if held == 0 {
		return ""
	}
	return "; " + itoa(uint32(min(held, 1<<31))) + " more since the last report were not reported (at most one a second, spec §8)"
}
