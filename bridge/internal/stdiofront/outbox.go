package stdiofront

import (
	"io"
	"log/slog"
	"sync"
)

// The stdio front's queue toward the host (spec §10, "Backpressure").

// outbox is the stdio front's queue toward the host (spec §10): putting a
// message never waits for the host to read, so neither the MCP-Flow
// session's hooks nor the responses of other requests are held up by a host
// that reads its stdout slowly; one writer goroutine writes the queue out in
// order.
//
// Backpressure: the queue holds at most limit bytes (a single larger message
// is let in when the queue is empty). Past it, a notification is dropped and
// counted (notifications come from the session's hooks, which must not
// block; the drops are logged, once when they begin and once with their
// number when the host has caught up), and a response or a request waits for
// room on the goroutine that sends it: a call's own goroutine, a server
// request's handler, or the front's reading goroutine, which then stops
// reading the host's input until the host reads its output.
type outbox struct {
	limit int
	log   *slog.Logger

	mu      sync.Mutex
	q       [][]byte
	size    int
	closed  bool
	dropped int           // notifications dropped since the queue was last empty
	room    chan struct{} // closed (and replaced) when the writer takes from q
	ready   chan struct{} // one token: q has something, or closed was set
}

func newOutbox(limit int, log *slog.Logger) *outbox {
	return &outbox{limit: limit, log: log, room: make(chan struct{}), ready: make(chan struct{}, 1)}
}

// put queues one framed message; droppable says that it may be dropped
// rather than wait for room. It reports whether b was queued. After close,
// put drops b.
func (o *outbox) put(b []byte, droppable bool) bool {
	o.mu.Lock()
	for !o.closed && o.size > 0 && o.size+len(b) > o.limit {
		if droppable {
			if o.dropped == 0 {
				o.log.Warn("the host is not reading its stdout: notifications are dropped until it catches up",
					"queued", o.size, "limit", o.limit)
			}
			o.dropped++
			o.mu.Unlock()
			return false
		}
		room := o.room
		o.mu.Unlock()
		<-room
		o.mu.Lock()
	}
	if o.closed {
		o.mu.Unlock()
		return false
	}
	o.q = append(o.q, b)
	o.size += len(b)
	o.mu.Unlock()
	o.signal()
	return true
}

func (o *outbox) signal() {
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// close makes run return once the queue is written out.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.signal()
}

// run writes the queue to w until close, in order. After a write error the
// rest is discarded (the host is gone), so that nothing waits for room.
func (o *outbox) run(w io.Writer) {
	var failed error
	for {
		o.mu.Lock()
		if len(o.q) == 0 {
			if o.dropped > 0 {
				o.log.Warn("the host caught up with its stdout", "notificationsDropped", o.dropped)
				o.dropped = 0
			}
			closed := o.closed
			o.mu.Unlock()
			if closed {
				return
			}
			<-o.ready
			continue
		}
		b := o.q[0]
		o.q[0] = nil
		o.q = o.q[1:]
		o.mu.Unlock()
		if failed == nil {
			if _, err := w.Write(b); err != nil {
				failed = err
				o.log.Warn("stdout write failed; later messages are discarded", "err", err)
			}
		}
		o.mu.Lock()
		o.size -= len(b)
		close(o.room)
		o.room = make(chan struct{})
		o.mu.Unlock()
	}
}
