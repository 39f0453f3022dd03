package plainio

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"time"
)

// The parser of Server-Sent Events streams (WHATWG HTML §9.2), the HTTP
// upstream's; the HTTP front's event log is its own (httpfront).

// SSEEvent is one dispatched event of an event stream.
type SSEEvent struct {
	Type string // the event field; "" for "message"
	Data []byte // the data lines, joined by LF
}

// SSEReader parses an event stream (WHATWG HTML §9.2.6, "Interpreting an
// event stream"), holding no event larger than max bytes.
type SSEReader struct {
	br     *bufio.Reader
	max    int
	lastID string
	retry  time.Duration
}

// NewSSEReader returns a reader of the event stream r.
func NewSSEReader(r io.Reader, max int) *SSEReader {
	return &SSEReader{br: bufio.NewReaderSize(r, 32<<10), max: max}
}

// Next returns the next event with data (events without data are only
// dispatched for their id and retry fields); ErrLineTooLong past max.
// Lines are read by ReadLine, the package's one line reader.
func (r *SSEReader) Next() (SSEEvent, error) {
	var data bytes.Buffer
	event := ""
	for {
		line, err := ReadLine(r.br, r.max)
		if err != nil {
			return SSEEvent{}, err
		}
		if len(line) == 0 { // dispatch
			if data.Len() > 0 {
				return SSEEvent{Type: event, Data: data.Bytes()}, nil
			}
			event = ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			if data.Len()+len(value) > r.max {
				return SSEEvent{}, ErrLineTooLong
			}
			data.Write(value)
		case "id":
			if !bytes.ContainsRune(value, 0) {
				r.lastID = string(value)
			}
		case "retry":
			if n, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				r.retry = time.Duration(n) * time.Millisecond
			}
		case "event":
			event = string(value)
		}
	}
}

// LastID is the stream's last event ID (its id field), for Last-Event-ID.
func (r *SSEReader) LastID() string { return r.lastID }

// Retry is the reconnection time the stream asked for (its retry field);
// zero if it did not.
func (r *SSEReader) Retry() time.Duration { return r.retry }
