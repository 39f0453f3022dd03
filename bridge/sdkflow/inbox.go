package sdkflow

import (
	"context"
	"sync"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// inbox holds the messages for a go-sdk connection's Read, in order. put
// never waits (the core's Front must not: spec §10): the go-sdk reads its
// connection all the time, handing each message to its own goroutines, so
// the inbox holds what one read has not yet taken. One goroutine reads.
type inbox struct {
	mu    sync.Mutex
	msgs  []jsonrpc.Message
	err   error         // set by close: get returns it once msgs is empty
	ready chan struct{} // a put or close since the reader last looked
}

func newInbox() *inbox { return &inbox{ready: make(chan struct{}, 1)} }

// put adds m, unless the inbox is closed (then m is dropped: nobody will
// read it).
func (q *inbox) put(m jsonrpc.Message) {
	q.mu.Lock()
	if q.err == nil {
		q.msgs = append(q.msgs, m)
	}
	q.mu.Unlock()
	q.wake()
}

// close makes get return err once the messages already in are read, or
// at once with drop (the first close's err wins).
func (q *inbox) close(err error, drop bool) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	if drop {
		q.msgs = nil
	}
	q.mu.Unlock()
	q.wake()
}

func (q *inbox) wake() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// get returns the next message, waiting for one until the inbox is closed
// or ctx ends.
func (q *inbox) get(ctx context.Context) (jsonrpc.Message, error) {
	for {
		q.mu.Lock()
		if len(q.msgs) > 0 {
			m := q.msgs[0]
			q.msgs[0] = nil
			q.msgs = q.msgs[1:]
			if len(q.msgs) == 0 {
				q.msgs = nil // let the array go once drained
			}
			q.mu.Unlock()
			return m, nil
		}
		err := q.err
		q.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
