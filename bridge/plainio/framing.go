package plainio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The stdio framings of seeds 000 and 002 (newline-delimited JSON, and
// Content-Length headers as in LSP, detected from what the peer sends) and
// the package's one bounded line reader (the SSE reader's too).

// Framing is how messages are delimited on a stdio pipe.
type Framing int

// The framings.
const (
	FramingNDJSON        Framing = iota // one JSON text per line
	FramingContentLength                // "Content-Length: N\r\n\r\n" then N bytes of UTF-8
)

func (f Framing) String() string {
	if f == FramingContentLength {
		return "Content-Length"
	}
	return "NDJSON"
}

// FramingError is a message that could not be delimited: the reader has
// skipped it and can go on.
type FramingError struct{ reason string }

func (e *FramingError) Error() string { return "bridge: " + e.reason }

// MaxMessage bounds one message read by a bridge: a line or a
// Content-Length body from stdio, an HTTP body, an SSE event (64 MiB).
const MaxMessage = 64 << 20

// ErrLineTooLong reports a line (or an SSE event) over its reader's limit.
// Nothing past the limit was kept, and the reader stopped inside the line:
// SkipLine goes on after it, and a reader that cannot go on fails.
var ErrLineTooLong = errors.New("line or event over the message limit")

// ReadLine reads one line of at most limit bytes, without its end, a buffer
// at a time (WHATWG HTML §9.2.5 for SSE): a line ends at LF, at CR, or at
// CRLF. A last line without an end is dropped (an SSE event is only
// dispatched by a blank line): io.EOF. Past limit: ErrLineTooLong.
func ReadLine(br *bufio.Reader, limit int) ([]byte, error) {
	return ReadLineEnds(br, limit, "\r\n")
}

// ReadLineEnds is ReadLine where a line ends at any byte of ends; with
// ends "\n" (NDJSON) a CR just before the LF is dropped, and a last line
// without its newline is returned before io.EOF.
func ReadLineEnds(br *bufio.Reader, limit int, ends string) ([]byte, error) {
	// For LF-ended lines, a CR just before the LF is dropped, so it does
	// not count against limit.
	slack := 0
	if ends == "\n" {
		slack = 1
	}
	// A long line is kept as the buffers it came in and joined once at its
	// end: a line that turns out too long never costs more than limit, and
	// one within it at most twice its length (never the many copies of a
	// growing slice).
	var parts [][]byte
	total := 0
	join := func(tail []byte) []byte {
		line := make([]byte, 0, total+len(tail))
		for _, p := range parts {
			line = append(line, p...)
		}
		return append(line, tail...)
	}
	for {
		buf, err := br.Peek(max(br.Buffered(), 1))
		if err != nil {
			if err == io.EOF && total > 0 && slack == 1 {
				return join(nil), nil // NDJSON: a last message without its newline
			}
			return nil, err
		}
		i := bytes.IndexAny(buf, ends)
		if i < 0 {
			if total+len(buf) > limit+slack {
				return nil, ErrLineTooLong
			}
			parts = append(parts, bytes.Clone(buf))
			total += len(buf)
			_, _ = br.Discard(len(buf))
			continue
		}
		n, last := total+i, byte(0)
		switch {
		case i > 0:
			last = buf[i-1]
		case total > 0:
			p := parts[len(parts)-1]
			last = p[len(p)-1]
		}
		if slack == 1 && last == '\r' {
			n--
		}
		if n > limit {
			return nil, ErrLineTooLong
		}
		line := join(buf[:i])
		cr := buf[i] == '\r'
		_, _ = br.Discard(i + 1)
		if cr {
			if nb, err := br.Peek(1); err == nil && nb[0] == '\n' {
				_, _ = br.Discard(1)
			}
		}
		if !cr && ends == "\n" {
			line = bytes.TrimSuffix(line, []byte{'\r'})
		}
		return line, nil
	}
}

// SkipLine discards input up to and including the next LF.
func SkipLine(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// FrameReader reads messages in whichever framing each one comes, each of
// at most limit bytes. Not safe for concurrent use.
type FrameReader struct {
	r     *bufio.Reader
	limit int
}

// NewFrameReader returns a reader of framed messages of at most limit bytes.
func NewFrameReader(r io.Reader, limit int) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), limit: limit}
}

// Read returns the next message, in a buffer of its own, and the framing it
// came in. A *FramingError reports a message it had to skip (a BOM, a
// broken header, a message over the limit); io.EOF the end of input.
func (r *FrameReader) Read() ([]byte, Framing, error) {
	for {
		// Skip blank lines between messages.
		b, err := r.r.Peek(1)
		if err != nil {
			return nil, FramingNDJSON, err
		}
		if b[0] == '\n' || b[0] == '\r' || b[0] == ' ' || b[0] == '\t' {
			_, _ = r.r.ReadByte()
			continue
		}
		break
	}
	if r.startsWith("\xef\xbb\xbf", false) {
		_ = SkipLine(r.r)
		return nil, FramingNDJSON, &FramingError{reason: "a UTF-8 byte order mark is not allowed before a message; the message was skipped"}
	}
	if r.startsWith("content-length:", true) {
		return r.readHeaders()
	}
	line, err := r.line()
	return line, FramingNDJSON, err
}

// startsWith reports whether the input goes on with prefix (ASCII letters
// in any case, with fold). It peeks one byte more only while those so far
// agree, so that a message shorter than the prefix ("[]", a short line of
// garbage) is read at once instead of waiting for more input.
func (r *FrameReader) startsWith(prefix string, fold bool) bool {
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

// line reads one NDJSON line; one past the limit is skipped and reported.
func (r *FrameReader) line() ([]byte, error) {
	line, err := ReadLineEnds(r.r, r.limit, "\n")
	if errors.Is(err, ErrLineTooLong) {
		_ = SkipLine(r.r)
		return nil, &FramingError{reason: fmt.Sprintf("a line longer than %d bytes was skipped", r.limit)}
	}
	return line, err
}

// readHeaders reads a Content-Length message: headers up to a blank line,
// then exactly that many bytes.
func (r *FrameReader) readHeaders() ([]byte, Framing, error) {
	n := -1
	for {
		line, err := r.line()
		if err != nil {
			return nil, FramingContentLength, err
		}
		if len(line) == 0 {
			break
		}
		k, v, ok := strings.Cut(string(line), ":")
		if !ok {
			return nil, FramingContentLength, &FramingError{reason: fmt.Sprintf("broken header line %q", clip(string(line)))}
		}
		if strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
			n, err = strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				return nil, FramingContentLength, &FramingError{reason: fmt.Sprintf("bad Content-Length %q", clip(strings.TrimSpace(v)))}
			}
		}
	}
	if n < 0 {
		return nil, FramingContentLength, &FramingError{reason: "headers without Content-Length"}
	}
	if n > r.limit {
		if _, err := r.r.Discard(n); err != nil {
			return nil, FramingContentLength, err
		}
		return nil, FramingContentLength, &FramingError{reason: fmt.Sprintf("Content-Length %d exceeds %d; the message was skipped", n, r.limit)}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.r, body); err != nil {
		return nil, FramingContentLength, err
	}
	return body, FramingContentLength, nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// AppendFramed appends msg in framing f. Content-Length counts UTF-8 bytes.
func AppendFramed(dst []byte, f Framing, msg []byte) []byte {
	return AppendFrameTail(append(AppendFrameHead(dst, f, len(msg)), msg...), f)
}

// FrameOverhead bounds the bytes a framing adds to a message.
const FrameOverhead = len("Content-Length: \r\n\r\n") + 20

// AppendFrameHead appends what framing f writes before a message of n
// bytes; AppendFrameTail what it writes after it.
func AppendFrameHead(dst []byte, f Framing, n int) []byte {
	if f != FramingContentLength {
		return dst
	}
	dst = append(dst, "Content-Length: "...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, "\r\n\r\n"...)
}

func AppendFrameTail(dst []byte, f Framing) []byte {
	if f == FramingContentLength {
		return dst
	}
	return append(dst, '\n')
}
