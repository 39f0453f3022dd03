package conformance

import "sync"

// clientOutput keeps what the client under test writes on stdout and
// stderr, for the checks that look for what it reports (client.stream-error,
// client.invalid-ref). A client may copy a stream of megabytes to stdout
// (the contract lets it), so only the first and the last outputKeep bytes
// of each are kept: a report comes at the start or at the end.
type clientOutput struct {
	mu         sync.Mutex
	head, tail []byte
	dropped    bool
}

// outputKeep is how much of each end clientOutput keeps.
const outputKeep = 32 << 10

func (o *clientOutput) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(b)
	if room := outputKeep - len(o.head); room > 0 {
		k := min(room, len(b))
		o.head = append(o.head, b[:k]...)
		b = b[k:]
	}
	o.tail = append(o.tail, b...)
	if over := len(o.tail) - outputKeep; over > 0 {
		o.tail = append(o.tail[:0], o.tail[over:]...)
		o.dropped = true
	}
	return n, nil
}

// String is the kept output; "…" marks what was dropped between the ends.
func (o *clientOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped {
		return string(o.head) + "…" + string(o.tail)
	}
	return string(o.head) + string(o.tail)
}
