package httpfront

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The event log the HTTP front serves its SSE streams from (WHATWG HTML
// §9.2); the one parser of event streams is plainio's.

// sseStream is the event log of one SSE stream of the HTTP front (spec
// §10). A writer follows it from a position; appends wake the writers. It
// keeps a window of the latest events for resumption (replayEvents,
// replayBytes); a follower that falls behind the window has lost events and
// is cut off. Every event held is charged to the stream's budget (the
// session's and the front's held bytes), and credited when dropped.
//
// All methods are safe for concurrent use; none blocks on I/O while holding
// the stream's lock.
type sseStream struct {
	id     int
	budget *heldBudget // nil: uncounted
	mu     sync.Mutex
	base   int // events before this sequence number are gone
	events [][]byte
	size   int
	sent   int // the furthest position a follower has written out
	done   bool
	wake   chan struct{}
}

// The replay window of one stream: the latest replayEvents events, within
// replayBytes (the newest event is always kept, whatever its size).
const (
	replayEvents = 1024
	replayBytes  = 16 << 20
)

// errEventsLost: a follower asked for events that left the replay window.
var errEventsLost = errors.New("events no longer available for replay")

// errNotTaken: the client took no event within WriteTimeout, or its
// connection failed; the stream ends and the events stay held for a
// resumption.
var errNotTaken = errors.New("the client did not take the stream's events")

func newSSEStream(id int, budget *heldBudget) *sseStream {
	return &sseStream{id: id, budget: budget, wake: make(chan struct{})}
}

// appendEvent adds one event (its data, one JSON text) and wakes the
// followers.
func (st *sseStream) appendEvent(e []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.events = append(st.events, e)
	st.size += len(e)
	freed := 0
	for len(st.events) > 1 && (len(st.events) > replayEvents || st.size > replayBytes) {
		freed += len(st.events[0])
		st.dropFirstLocked()
	}
	st.budget.credit(freed)
	close(st.wake)
	st.wake = make(chan struct{})
}

func (st *sseStream) dropFirstLocked() {
	st.size -= len(st.events[0])
	st.events[0] = nil
	st.events = st.events[1:]
	st.base++
}

// dropDelivered frees the events every follower so far has written out
// (they are then gone for resumption) and returns how many bytes it freed.
func (st *sseStream) dropDelivered() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	freed := 0
	for len(st.events) > 0 && st.base < st.sent {
		freed += len(st.events[0])
		st.dropFirstLocked()
	}
	st.budget.credit(freed)
	return freed
}

// release frees every event held (the stream is forgotten).
func (st *sseStream) release() {
	st.mu.Lock()
	defer st.mu.Unlock()
	freed := st.size
	st.base += len(st.events)
	st.events, st.size = nil, 0
	st.budget.credit(freed)
}

func (st *sseStream) finish() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return
	}
	st.done = true
	close(st.wake)
	st.wake = make(chan struct{})
}

// bytes is what the stream holds for replay.
func (st *sseStream) bytes() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.size
}

// first is the position of the oldest event held.
func (st *sseStream) first() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.base
}

// available reports whether the events after position from are all still
// held.
func (st *sseStream) available(from int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return from >= st.base && from <= st.base+len(st.events)
}

// prime writes the priming event of a stream followed from position from
// (MCP 2025-11-25 transports: an event id with empty data, so that a client
// can resume before the first message) and flushes it.
func (st *sseStream) prime(w http.ResponseWriter, from int) {
	fmt.Fprintf(w, "id: %d.%d\ndata: \n\n", st.id, from)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// follow writes the events after position from (0: all) until the stream is
// done or ctx ends, and returns the position reached; errEventsLost when the
// next event has left the replay window, errNotTaken when the client did
// not take what was written. A client that takes no event for
// timeout (HTTPConfig.WriteTimeout; 0: no limit) is cut off like one that
// left: the events stay held, within the session's budget, for a
// resumption with Last-Event-ID (a 2025 disconnect is not a cancellation).
func (st *sseStream) follow(ctx context.Context, w http.ResponseWriter, from int, timeout time.Duration) (int, error) {
	rc := http.NewResponseController(w)
	for {
		st.mu.Lock()
		if from < st.base {
			st.mu.Unlock()
			return from, errEventsLost
		}
		evs, done, wake := st.events[min(from-st.base, len(st.events)):], st.done, st.wake
		st.mu.Unlock()
		if timeout > 0 && len(evs) > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(timeout))
		}
		for _, e := range evs {
			from++
			if err := writeEvent(w, st.id, from, e); err != nil {
				return from - 1, fmt.Errorf("%w: %v", errNotTaken, err) // the client is gone; it may resume
			}
		}
		if len(evs) > 0 {
			if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
				// Not taken: the client resumes from its own Last-Event-ID.
				return from - len(evs), fmt.Errorf("%w: %v", errNotTaken, err)
			}
			if timeout > 0 {
				_ = rc.SetWriteDeadline(time.Time{})
			}
		}
		st.mu.Lock()
		st.sent = max(st.sent, from)
		st.mu.Unlock()
		if done {
			return from, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return from, nil
		}
	}
}

// writeEvent writes the event of data e at position from of stream id:
// its id and data lines, e written as it is (not copied into a formatted
// line).
func writeEvent(w io.Writer, id, from int, e []byte) error {
	var head [64]byte
	if _, err := w.Write(fmt.Appendf(head[:0], "id: %d.%d\ndata: ", id, from)); err != nil {
		return err
	}
	if _, err := w.Write(e); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n\n")
	return err
}

// parseEventID splits "<stream>.<seq>".
func parseEventID(id string) (int, int, bool) {
	a, b, ok := strings.Cut(id, ".")
	sid, err1 := strconv.Atoi(a)
	seq, err2 := strconv.Atoi(b)
	return sid, seq, ok && err1 == nil && err2 == nil && sid >= 0 && seq >= 0
}

// heldBudget counts the bytes of SSE events held by one session of the HTTP
// front against HTTPConfig.MaxSessionHeld, and through its parent those of
// all sessions against HTTPConfig.MaxHeld (spec §10). A nil budget counts
// nothing. A child's lock is taken before its parent's.
type heldBudget struct {
	mu       sync.Mutex
	n, max   int64
	parent   *heldBudget
	detached bool // the session is over: what it holds is no longer counted above
}

// take charges n bytes, unless that would pass a cap.
func (b *heldBudget) take(n int) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n+int64(n) > b.max {
		return false
	}
	if !b.detached && !b.parent.take(n) {
		return false
	}
	b.n += int64(n)
	return true
}

// force charges n bytes whatever the caps (a small error reply that stands
// for a refused event).
func (b *heldBudget) force(n int) { b.add(int64(n)) }

func (b *heldBudget) credit(n int) { b.add(-int64(n)) }

func (b *heldBudget) add(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += n
	if !b.detached {
		b.parent.add(n)
	}
}

// detach gives what the budget holds back to its parent, for good: the
// session is over, and its events go with it.
func (b *heldBudget) detach() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.detached {
		b.detached = true
		b.parent.add(-b.n)
	}
}

func (b *heldBudget) held() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
