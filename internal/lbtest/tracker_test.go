package lbtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
)

// Callers: each makes calls one after the other, each call the tally tool
// with a key of its own (so that an answer is matched to its call, and the
// tally file counts how often the call ran), and retries a call only when
// the error says that the request did not run.

// verdict is what a failed attempt's error says about its request.
type verdict int

const (
	// mayHaveRun: the request may have been executed; it is never retried
	// and its call is lost.
	mayHaveRun verdict = iota
	// didNotRun: the error says the request was not executed (-32006, a
	// 404 for a session already gone, a 503 refusal, no session to send it
	// on): the call is retried.
	didNotRun
)

// Bounds of one attempt and of a call with its retries.
const (
	attemptBound = 30 * time.Second
	callBound    = 90 * time.Second
)

// client is one client of a kind, shared by its callers (its call is safe
// for concurrent use). why names the error's class for the counts.
type client interface {
	call(ctx context.Context, key string) (text string, v verdict, why string, err error)
	close() error
}

// counts of one kind of client.
type counts struct {
	issued, answered, lost, wrong int
	retries                       int            // attempts that failed with a didNotRun error
	retriedCalls                  int            // calls answered after at least one retry
	retryWhy                      map[string]int // retries by class of error
	reconnects                    int            // sessions opened again by the test's client code
	connectFails                  map[string]int // failed attempts to open one, by class
	connectErrs                   []string       // the first few of them, with their durations
	lostWhy                       map[string]int // lost calls by class of error
	lostErrs                      []string       // the first few lost calls' errors
	inDoubt                       int            // calls failed in the hard kill's window with an error that says they may have run
	doubtWhy                      map[string]int // those by class of error
}

// tracker counts every call of every kind and tells waiters when a call
// has been answered.
type tracker struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on each answer
	kinds   map[string]*counts
	callers map[string]int      // answered calls by caller
	keys    map[string]string   // key → kind of the caller, for the tally's check
	done    map[string]bool     // key → answered
	history map[string][]string // key → its failed attempts' errors

	mark  map[string]int       // answered calls by caller at the last mark
	since map[string]time.Time // when each caller was first answered after the mark

	// The hard kill's window (beginKill to endKill): a call that fails in
	// it with an error that says it may have run (its server was killed
	// with it in flight) is in doubt, not lost: the caller was told, and
	// the tally says whether it ran. It is not retried (a retry of one that
	// ran would run it twice).
	killWindow bool
	// killed is set at the kill's start and stays set: a session of the
	// killed server can end long after the window closed (peerGone).
	killed   bool
	doubt    map[string]string    // key → kind, of the calls in doubt
	lostAt   map[string]lostCall  // key → when and why, of the lost calls
	firstErr map[string]time.Time // caller → its first failed attempt in the window
	againAt  map[string]time.Time // caller → its first answer after that
}

// lostCall is when a lost call failed, and its class in counts.lostWhy.
type lostCall struct {
	at    time.Time
	class string
}

// beginKill opens the hard kill's window and marks (markNow).
func (tr *tracker) beginKill() map[string]int {
	mark := tr.markNow()
	tr.update(func() {
		tr.killWindow, tr.killed, tr.firstErr, tr.againAt = true, true, map[string]time.Time{}, map[string]time.Time{}
	})
	return mark
}

// reconnected reports, under the lock, whether every caller that failed in
// the kill's window has been answered since.
func (tr *tracker) reconnected() bool {
	for id := range tr.firstErr {
		if tr.againAt[id].IsZero() {
			return false
		}
	}
	return true
}

// endKill closes the hard kill's window.
func (tr *tracker) endKill() { tr.update(func() { tr.killWindow = false }) }

// killTimes is, by kind, how long after t0 (the kill) its callers that saw
// an error in the window saw their first (time to notice), and had their
// first answer after it (time to reconnect): median and worst of each, and
// how many callers saw one.
func (tr *tracker) killTimes(t0 time.Time) map[string]string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	notice, again := map[string][]time.Duration{}, map[string][]time.Duration{}
	for id, at := range tr.firstErr {
		kind := id[:strings.Index(id, "-c")]
		notice[kind] = append(notice[kind], at.Sub(t0))
		if a, ok := tr.againAt[id]; ok {
			again[kind] = append(again[kind], a.Sub(t0))
		}
	}
	out := map[string]string{}
	for kind := range notice {
		out[kind] = fmt.Sprintf("%d callers saw an error: noticed %s, answered again %s", len(notice[kind]), medianWorst(notice[kind]), medianWorst(again[kind]))
	}
	return out
}

// medianWorst is "median M, worst W" of ds.
func medianWorst(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	slices.Sort(ds)
	return fmt.Sprintf("median %v, worst %v", ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
}

// markNow records every caller's answered calls, and returns them: since
// then, the first answer of each caller is timed (slowest).
func (tr *tracker) markNow() map[string]int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.mark, tr.since = maps.Clone(tr.callers), map[string]time.Time{}
	return maps.Clone(tr.mark)
}

// slowest names, by kind, the caller answered last after the mark and
// when (from t0).
func (tr *tracker) slowest(t0 time.Time) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	worst := map[string]string{}
	at := map[string]time.Duration{}
	for id, t := range tr.since {
		kind := id[:strings.Index(id, "-c")]
		if d := t.Sub(t0); d >= at[kind] {
			at[kind], worst[kind] = d, id
		}
	}
	var b []string
	for _, k := range slices.Sorted(maps.Keys(at)) {
		b = append(b, fmt.Sprintf("%s %v (%s)", k, at[k].Round(time.Millisecond), worst[k]))
	}
	return strings.Join(b, ", ")
}

func newTracker() *tracker {
	return &tracker{changed: make(chan struct{}), kinds: map[string]*counts{}, callers: map[string]int{}, keys: map[string]string{}, done: map[string]bool{}, history: map[string][]string{}, doubt: map[string]string{}, lostAt: map[string]lostCall{}}
}

func (tr *tracker) kind(name string) *counts {
	c := tr.kinds[name]
	if c == nil {
		c = &counts{retryWhy: map[string]int{}, connectFails: map[string]int{}, lostWhy: map[string]int{}, doubtWhy: map[string]int{}}
		tr.kinds[name] = c
	}
	return c
}

func (tr *tracker) update(f func()) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	f()
}

// wait waits until cond (called under the lock) holds, each answer
// waking it; after bound it fails the test, saying what (called then).
func (tr *tracker) wait(t *testing.T, what func() string, bound time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.After(bound)
	for {
		tr.mu.Lock()
		ok, ch := cond(), tr.changed
		tr.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s: not within %v\n%s", what(), bound, tr.report())
		}
	}
}

// snapshot returns the answered calls of every caller.
func (tr *tracker) snapshot() map[string]int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return maps.Clone(tr.callers)
}

// everyCallerPast reports, under the lock, whether every caller has had a
// call answered since mark.
func (tr *tracker) everyCallerPast(mark map[string]int) bool {
	for id, n := range tr.callers {
		if n <= mark[id] {
			return false
		}
	}
	return true
}

// laggards names the callers without an answer since mark.
func (tr *tracker) laggards(mark map[string]int) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var l []string
	for id, n := range tr.callers {
		if n <= mark[id] {
			l = append(l, id)
		}
	}
	slices.Sort(l)
	return l
}

// run is one caller: calls until stop, each retried while its error says
// it did not run (with a short backoff: a client's, not a test's wait).
func (tr *tracker) run(ctx context.Context, stop <-chan struct{}, kind, id string, c client) {
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("%s-%d", id, n)
		tr.update(func() { tr.kind(kind).issued++; tr.keys[key] = kind })
		began := time.Now()
		for attempt := 0; ; attempt++ {
			actx, cancel := context.WithTimeout(ctx, attemptBound)
			text, v, why, err := c.call(actx, key)
			cancel()
			if err == nil {
				tr.update(func() {
					k := tr.kind(kind)
					if text != key {
						k.wrong++
						k.lostErrs = appendFew(k.lostErrs, fmt.Sprintf("%s: answered %q", key, text))
						return
					}
					k.answered++
					if attempt > 0 {
						k.retriedCalls++
					}
					tr.done[key] = true
					tr.callers[id]++
					if tr.mark != nil && tr.callers[id] == tr.mark[id]+1 {
						tr.since[id] = time.Now()
					}
					if _, failed := tr.firstErr[id]; failed && tr.againAt[id].IsZero() {
						tr.againAt[id] = time.Now()
					}
					close(tr.changed)
					tr.changed = make(chan struct{})
				})
				break
			}
			tr.update(func() {
				tr.history[key] = append(tr.history[key], fmt.Sprintf("attempt %d after %v: %s: %v", attempt+1, time.Since(began).Round(time.Millisecond), why, err))
				if _, ok := tr.firstErr[id]; tr.killWindow && !ok {
					tr.firstErr[id] = time.Now()
				}
			})
			if v == didNotRun && time.Since(began) < callBound && ctx.Err() == nil {
				tr.update(func() { k := tr.kind(kind); k.retries++; k.retryWhy[why]++ })
				pause(ctx, backoff(attempt))
				continue
			}
			tr.update(func() {
				k := tr.kind(kind)
				if (tr.killWindow || tr.killed && peerGone(err)) && v == mayHaveRun && !errors.Is(err, context.DeadlineExceeded) {
					k.inDoubt++
					k.doubtWhy[why]++
					tr.doubt[key] = kind
					return
				}
				k.lost++
				k.lostWhy[lostClass(why, err)]++
				tr.lostAt[key] = lostCall{time.Now(), lostClass(why, err)}
				k.lostErrs = appendFew(k.lostErrs, fmt.Sprintf("%s (attempt %d, %s, after %v): %v", key, attempt+1, why, time.Since(began).Round(time.Millisecond), err))
			})
			break
		}
	}
}

// peerGoneText is how a session that ended without a word from its server
// (a stateless reset or the idle timeout: flow.CloseConnectionLost) reads
// in an error, the fronts' JSON-RPC errors included.
var peerGoneText = fmt.Sprintf("%s (code %d", flow.CloseText(flow.CloseConnectionLost), flow.CloseConnectionLost)

// peerGone reports whether err says that its session ended without a word
// from the server. After the hard kill that is a session of the killed
// server, whenever it ends: a client that does not hear the replacement's
// stateless reset (nginx's UDP proxy drops it at times: docs/deploy.md,
// "Fleet") learns only at its idle timeout, 8 s after the kill, and the
// calls it sent on the session in the meantime, after the kill's window
// may have closed (every caller answered again, on another session of the
// HTTP front's, or between the mark and the SIGKILL), fail with it. They
// are in doubt as those in flight at the kill: the error says that the
// server was lost with them. No session ends so in the rolling restart
// (every session drains), where such a failure is lost.
func peerGone(err error) bool { return strings.Contains(err.Error(), peerGoneText) }

func appendFew(s []string, e string) []string {
	if len(s) < 10 {
		return append(s, e)
	}
	return s
}

// backoff is the wait before retry attempt+1: 20 ms doubling to 500 ms.
func backoff(attempt int) time.Duration {
	return min(20*time.Millisecond<<min(attempt, 5), 500*time.Millisecond)
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// report is the counts of every kind, one line each.
func (tr *tracker) report() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(tr.kinds)) {
		k := tr.kinds[name]
		fmt.Fprintf(&b, "%-10s issued %d, answered exactly once %d, lost %d %v, wrong answers %d, in doubt after the kill %d %v; retries %d (%v) in %d calls; sessions reopened %d, failed opens %v\n",
			name, k.issued, k.answered, k.lost, k.lostWhy, k.wrong, k.inDoubt, k.doubtWhy, k.retries, k.retryWhy, k.retriedCalls, k.reconnects, k.connectFails)
		for _, e := range k.lostErrs {
			fmt.Fprintf(&b, "    lost: %s\n", e)
		}
		for _, e := range k.connectErrs {
			fmt.Fprintf(&b, "    failed open: %s\n", e)
		}
	}
	return b.String()
}

// lostClass names a lost call's error for the counts: its class, and for
// a front's -32603 "lost", the reason it gives.
func lostClass(why string, err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "lost: flow: session ended: clean shutdown"):
		return why + " (the session had drained: clean shutdown)"
	case strings.HasSuffix(s, "/mcp-flow lost"):
		return why + " (no reason: the front was closing)"
	}
	return why
}
