// Package bridge connects plain MCP peers to MCP-Flow. This file holds the
// stdio framings of seeds 000 and 002: newline-delimited JSON, and
// Content-Length headers (as LSP), detected from what the peer sends.
package bridge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Framing is how messages are delimited on a stdio pipe.
type Framing int

// The framings.
const (
	NDJSON        Framing = iota // one JSON text per line
	ContentLength                // "Content-Length: N\r\n\r\n" then N bytes of UTF-8
)

func (f Framing) String() string {
	if f == ContentLength {
		return "Content-Length"
	}
	return "NDJSON"
}

// FramingError is a message that could not be delimited: the reader has
// skipped it and can go on.
type FramingError struct{ Reason string }

func (e *FramingError) Error() string { return "bridge: " + e.Reason }

// MaxMessage bounds one message read from stdio (64 MiB).
const MaxMessage = 64 << 20

// Reader reads messages in whichever framing each one comes. Not safe for
// concurrent use.
type Reader struct {
	r *bufio.Reader
}

// NewReader returns a reader of framed messages.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 64<<10)} }

// Read returns the next message and the framing it came in. A *FramingError
// reports a message it had to skip (a BOM, a broken header, a message over
// MaxMessage); io.EOF the end of input.
func (r *Reader) Read() ([]byte, Framing, error) {
	for {
		// Skip blank lines between messages.
		b, err := r.r.Peek(1)
		if err != nil {
			return nil, NDJSON, err
		}
		if b[0] == '\n' || b[0] == '\r' || b[0] == ' ' || b[0] == '\t' {
			_, _ = r.r.ReadByte()
			continue
		}
		break
	}
	if r.startsWith("\xef\xbb\xbf", false) {
		_, _ = r.r.Discard(3)
		line, _ := r.readLine()
		_ = line
		return nil, NDJSON, &FramingError{Reason: "a UTF-8 byte order mark is not allowed before a message; the message was skipped"}
	}
	if r.startsWith("content-length:", true) {
		return r.readHeaders()
	}
	line, err := r.readLine()
	if err != nil {
		return nil, NDJSON, err
	}
	return line, NDJSON, nil
}

// startsWith reports whether the input goes on with prefix (ASCII letters
// in any case, with fold). It peeks one byte more only while those so far
// agree, so that a message shorter than the prefix ("[]", a short line of
// garbage) is read at once instead of waiting for more input.
func (r *Reader) startsWith(prefix string, fold bool) bool {
	for n := 1; n <= len(prefix); n++ {
		b, _ := r.r.Peek(n)
		if len(b) < n {
			return false
		}
		c, p := b[n-1], prefix[n-1]
		if fold && 'a' <= p && p <= 'z' {
			c |= 0x20
		}
		if c != p {
			return false
		}
	}
	return true
}

// readLine reads one line, without its end, bounded by MaxMessage.
func (r *Reader) readLine() ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.r.ReadSlice('\n')
		if len(out)+len(chunk) > MaxMessage {
			// Drop the rest of the line, then report.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.r.ReadSlice('\n')
			}
			return nil, &FramingError{Reason: fmt.Sprintf("a line longer than %d bytes was skipped", MaxMessage)}
		}
		if len(out)+len(chunk) > cap(out) {
			// Double, up to MaxMessage: append grows a large slice by a
			// quarter at a time, which allocates five times a long line.
			grown := make([]byte, len(out), min(max(2*cap(out), len(out)+len(chunk)), MaxMessage))
			copy(grown, out)
			out = grown
		}
		out = append(out, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (err != io.EOF || len(out) == 0) {
			return nil, err
		}
		return bytes.TrimRight(out, "\r\n"), nil
	}
}

// readHeaders reads a Content-Length message: headers up to a blank line,
// then exactly that many bytes.
func (r *Reader) readHeaders() ([]byte, Framing, error) {
	n := -1
	for {
		line, err := r.readLine()
		if err != nil {
			return nil, ContentLength, err
		}
		if len(line) == 0 {
			break
		}
		k, v, ok := strings.Cut(string(line), ":")
		if !ok {
			return nil, ContentLength, &FramingError{Reason: fmt.Sprintf("broken header line %q", clip(string(line)))}
		}
		if strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
			n, err = strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				return nil, ContentLength, &FramingError{Reason: fmt.Sprintf("bad Content-Length %q", clip(strings.TrimSpace(v)))}
			}
		}
	}
	if n < 0 {
		return nil, ContentLength, &FramingError{Reason: "headers without Content-Length"}
	}
	if n > MaxMessage {
		_, _ = r.r.Discard(n)
		return nil, ContentLength, &FramingError{Reason: fmt.Sprintf("Content-Length %d exceeds %d; the message was skipped", n, MaxMessage)}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.r, body); err != nil {
		return nil, ContentLength, err
	}
	return body, ContentLength, nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// AppendFramed appends msg in framing f. Content-Length counts UTF-8 bytes.
func AppendFramed(dst []byte, f Framing, msg []byte) []byte {
	if f == ContentLength {
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, int64(len(msg)), 10)
		dst = append(dst, "\r\n\r\n"...)
		return append(dst, msg...)
	}
	dst = append(dst, msg...)
	return append(dst, '\n')
}
