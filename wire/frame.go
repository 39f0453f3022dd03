package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"slices"
)

// FrameHeaderLen is the size of a control frame's length prefix (spec §3.1).
const FrameHeaderLen = 4

// DefaultMaxFrameSize is the default limit on a control frame's payload:
// 16 MiB. Larger results belong on execution streams (spec §3.2). It is
// announced to the peer as maxFrameSize in the initialize result.
const DefaultMaxFrameSize = 16 << 20

// AppendFrame appends a control frame carrying payload to dst: the payload's
// length as 4 bytes big-endian, then the payload (spec §3.1). It panics if
// payload is empty or longer than 2^32-1 bytes, which are programming errors.
func AppendFrame(dst, payload []byte) []byte {
	if len(payload) == 0 || uint64(len(payload)) > 0xFFFFFFFF {
		panic("wire: control frame payload must be 1 to 2^32-1 bytes")
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// FrameReader reads control frames from an io.Reader (spec §3.1).
//
// A FrameReader keeps its buffer between frames, up to RetainedFrameBuffer
// bytes: a buffer grown for a larger frame is dropped at the next ReadFrame,
// so an idle session does not hold its largest frame's memory (spec §8).
//
// A FrameReader is not safe for concurrent use: one goroutine reads.
type FrameReader struct {
	r   io.Reader
	max uint32
	hdr [FrameHeaderLen]byte
	buf []byte
}

// RetainedFrameBuffer is the largest buffer a FrameReader keeps from one frame
// to the next: 64 KiB. A larger frame's buffer is released when the next
// ReadFrame starts (before it waits for the next frame).
const RetainedFrameBuffer = 64 << 10

// NewFrameReader returns a reader of frames from r that rejects frames longer
// than max bytes (max 0 means DefaultMaxFrameSize). It reads r through a
// 4 KiB buffer, so that a small frame costs one read of r, not two.
func NewFrameReader(r io.Reader, max uint32) *FrameReader {
	if max == 0 {
		max = DefaultMaxFrameSize
	}
	return &FrameReader{r: bufio.NewReaderSize(r, 4096), max: max}
}

// MaxFrameSize returns the limit in force.
func (fr *FrameReader) MaxFrameSize() uint32 { return fr.max }

// ReadFrame reads the next frame and returns its payload. The payload is only
// valid until the next call to ReadFrame, which drops a buffer larger than
// RetainedFrameBuffer before it reads anything.
//
// It returns io.EOF at a clean end between frames, io.ErrUnexpectedEOF when
// the stream ends inside a frame, ErrZeroLength for a zero length and a
// *FrameTooLargeError for a length above the limit; in the last two cases
// nothing past the prefix has been read and nothing has been allocated for it.
func (fr *FrameReader) ReadFrame() ([]byte, error) {
	if cap(fr.buf) > RetainedFrameBuffer {
		fr.buf = nil
	}
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(fr.hdr[:])
	if n == 0 {
		return nil, ErrZeroLength
	}
	if n > fr.max {
		return nil, &FrameTooLargeError{Length: n, Max: fr.max}
	}
	if uint32(cap(fr.buf)) >= n {
		fr.buf = fr.buf[:n]
		if _, err := io.ReadFull(fr.r, fr.buf); err != nil {
			return nil, unexpected(err)
		}
		return fr.buf, nil
	}
	// A frame larger than any seen before: grow the buffer no faster than the
	// bytes arrive, so that a peer declaring 16 MiB and sending 10 bytes
	// costs 64 KiB, not 16 MiB.
	fr.buf = fr.buf[:0]
	for uint32(len(fr.buf)) < n {
		if len(fr.buf) == cap(fr.buf) {
			fr.buf = slices.Grow(fr.buf, min(int(n), max(2*cap(fr.buf), RetainedFrameBuffer))-len(fr.buf))
		}
		m, err := io.ReadFull(fr.r, fr.buf[len(fr.buf):min(int(n), cap(fr.buf))])
		fr.buf = fr.buf[:len(fr.buf)+m]
		if err != nil {
			return nil, unexpected(err)
		}
	}
	return fr.buf, nil
}

// ParseFrame parses one frame from the start of b, returning the payload
// (aliasing b) and the number of bytes consumed. It returns io.EOF when b
// holds less than a whole frame.
func ParseFrame(b []byte, max uint32) (payload []byte, n int, err error) {
	if len(b) < FrameHeaderLen {
		return nil, 0, io.EOF
	}
	l := binary.BigEndian.Uint32(b)
	if l == 0 {
		return nil, 0, ErrZeroLength
	}
	if max == 0 {
		max = DefaultMaxFrameSize
	}
	if l > max {
		return nil, 0, &FrameTooLargeError{Length: l, Max: max}
	}
	end := FrameHeaderLen + int(l)
	if len(b) < end {
		return nil, 0, io.EOF
	}
	return b[FrameHeaderLen:end], end, nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// BeginFrame appends a placeholder length prefix to dst, so that an encoder
// can append the payload in place; FinishFrame then fills the prefix in.
func BeginFrame(dst []byte) []byte { return append(dst, 0, 0, 0, 0) }

// FinishFrame writes the length prefix of the frame that BeginFrame started
// at offset off of b. It fails with ErrZeroLength for an empty payload and a
// *FrameTooLargeError when the payload exceeds max (0: DefaultMaxFrameSize),
// the peer's announced maxFrameSize.
func FinishFrame(b []byte, off int, max uint32) error {
	if max == 0 {
		max = DefaultMaxFrameSize
	}
	n := len(b) - off - FrameHeaderLen
	if n <= 0 {
		return ErrZeroLength
	}
	if uint64(n) > uint64(max) {
		return &FrameTooLargeError{Length: uint32(min(uint64(n), 0xFFFFFFFF)), Max: max}
	}
	binary.BigEndian.PutUint32(b[off:], uint32(n))
	return nil
}
