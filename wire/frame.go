package wire

import (
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"sync"
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
// A FrameReader that waits for a frame holds no buffer: it reads the next
// length prefix straight from r, and only then takes a buffer for the
// payload, from a pool shared by every FrameReader. A payload of up to
// readAheadSize bytes is read into a read-ahead buffer together with
// whatever else r has ready (the frames that follow it in a burst then cost
// no read of r); a larger one up to RetainedFrameBuffer goes into a pooled
// buffer of that size; a larger one still into a buffer of its own, grown
// no faster than its bytes arrive. The next ReadFrame gives the buffers
// back before it waits, so an idle session holds no frame memory, whatever
// frames it read before (spec §8).
//
// A FrameReader is not safe for concurrent use: one goroutine reads.
type FrameReader struct {
	r   io.Reader
	max uint32
	hdr [FrameHeaderLen]byte
	// ahead is the read-ahead buffer (pooled, nil while none is needed);
	// ahead[lo:hi] is read from r and not yet returned.
	ahead  *[readAheadSize]byte
	lo, hi int
	// mid is the pooled buffer of the last payload of readAheadSize to
	// RetainedFrameBuffer bytes, nil otherwise.
	mid *[RetainedFrameBuffer]byte
	// buf is the buffer of the last payload returned (in ahead, mid or a
	// buffer of its own), nil between frames.
	buf []byte
}

// RetainedFrameBuffer is the largest buffer a FrameReader takes from its
// pool: 64 KiB. A larger frame gets a buffer of its own, which is dropped
// when the next ReadFrame starts (before it waits for the next frame).
const RetainedFrameBuffer = 64 << 10

// readAheadSize is the size of a FrameReader's read-ahead buffer: 4 KiB.
const readAheadSize = 4 << 10

var (
	aheadPool = sync.Pool{New: func() any { return new([readAheadSize]byte) }}
	midPool   = sync.Pool{New: func() any { return new([RetainedFrameBuffer]byte) }}
)

// NewFrameReader returns a reader of frames from r that rejects frames longer
// than max bytes (max 0 means DefaultMaxFrameSize).
func NewFrameReader(r io.Reader, max uint32) *FrameReader {
	if max == 0 {
		max = DefaultMaxFrameSize
	}
	return &FrameReader{r: r, max: max}
}

// MaxFrameSize returns the limit in force.
func (fr *FrameReader) MaxFrameSize() uint32 { return fr.max }

// ReadFrame reads the next frame and returns its payload. The payload is only
// valid until the next call to ReadFrame, which gives the payload's buffer
// back (and drops one larger than RetainedFrameBuffer) before it reads
// anything.
//
// It returns io.EOF at a clean end between frames, io.ErrUnexpectedEOF when
// the stream ends inside a frame, ErrZeroLength for a zero length and a
// *FrameTooLargeError for a length above the limit; in the last two cases
// nothing past the prefix has been read and nothing has been allocated for it.
func (fr *FrameReader) ReadFrame() ([]byte, error) {
	fr.release()
	n, err := fr.fill(fr.hdr[:])
	if err != nil {
		if n > 0 || !errors.Is(err, io.EOF) {
			return nil, unexpected(err)
		}
		return nil, err
	}
	l := binary.BigEndian.Uint32(fr.hdr[:])
	if l == 0 {
		return nil, ErrZeroLength
	}
	if l > fr.max {
		return nil, &FrameTooLargeError{Length: l, Max: fr.max}
	}
	n = int(l)
	switch {
	case n <= readAheadSize:
		return fr.readSmall(n)
	case n <= RetainedFrameBuffer:
		fr.mid = midPool.Get().(*[RetainedFrameBuffer]byte)
		fr.buf = fr.mid[:n]
		if _, err := fr.fill(fr.buf); err != nil {
			return nil, unexpected(err)
		}
		return fr.buf, nil
	}
	// A frame larger than the pool's buffers: grow its own buffer no faster
	// than the bytes arrive, so that a peer declaring 16 MiB and sending 10
	// bytes costs 64 KiB, not 16 MiB.
	for len(fr.buf) < n {
		if len(fr.buf) == cap(fr.buf) {
			fr.buf = slices.Grow(fr.buf, min(n, max(2*cap(fr.buf), RetainedFrameBuffer))-len(fr.buf))
		}
		k, err := fr.fill(fr.buf[len(fr.buf):min(n, cap(fr.buf))])
		fr.buf = fr.buf[:len(fr.buf)+k]
		if err != nil {
			return nil, unexpected(err)
		}
	}
	return fr.buf, nil
}

// Owned reports whether the payload ReadFrame returned last is in a buffer
// of its own (a frame larger than RetainedFrameBuffer), which the
// FrameReader drops at the next ReadFrame and never reuses: the caller may
// keep that payload instead of copying it.
func (fr *FrameReader) Owned() bool { return len(fr.buf) > RetainedFrameBuffer }

// release gives back what the last frame held: its payload's buffer, and
// the read-ahead buffer unless it holds bytes not yet returned.
func (fr *FrameReader) release() {
	fr.buf = nil
	if fr.mid != nil {
		midPool.Put(fr.mid)
		fr.mid = nil
	}
	if fr.ahead != nil && fr.lo == fr.hi {
		aheadPool.Put(fr.ahead)
		fr.ahead, fr.lo, fr.hi = nil, 0, 0
	}
}

// readSmall returns a payload of n <= readAheadSize bytes from the
// read-ahead buffer, reading r into it (as much as r has ready) when it
// holds less than n bytes.
func (fr *FrameReader) readSmall(n int) ([]byte, error) {
	if fr.hi-fr.lo < n {
		if fr.ahead == nil {
			fr.ahead = aheadPool.Get().(*[readAheadSize]byte)
		}
		fr.hi = copy(fr.ahead[:], fr.ahead[fr.lo:fr.hi])
		fr.lo = 0
		k, err := io.ReadAtLeast(fr.r, fr.ahead[fr.hi:], n-fr.hi)
		fr.hi += k
		if err != nil {
			return nil, unexpected(err)
		}
	}
	fr.buf = fr.ahead[fr.lo : fr.lo+n]
	fr.lo += n
	return fr.buf, nil
}

// fill reads len(p) bytes into p: first what the read-ahead buffer holds,
// then straight from r. It returns how many it read.
func (fr *FrameReader) fill(p []byte) (int, error) {
	n := 0
	if fr.ahead != nil {
		n = copy(p, fr.ahead[fr.lo:fr.hi])
		fr.lo += n
	}
	if n == len(p) {
		return n, nil
	}
	k, err := io.ReadFull(fr.r, p[n:])
	return n + k, err
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
