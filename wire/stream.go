package wire

import (
	"encoding/binary"
	"io"
)

// StreamHeaderLen is the size of an execution stream header (spec §3.2).
const StreamHeaderLen = 8

// StreamHeader opens every execution stream (spec §3.2, guide §2.2): the id
// of the request whose result the stream belongs to, and the stream tag that
// the result's ref/stream content names.
type StreamHeader struct {
	RequestID uint32
	StreamTag uint32
}

// Append appends the 8-byte header to b.
func (h StreamHeader) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, h.RequestID)
	return binary.BigEndian.AppendUint32(b, h.StreamTag)
}

// ParseStreamHeader parses a header from the start of b. It returns io.EOF
// when b is shorter than StreamHeaderLen.
func ParseStreamHeader(b []byte) (StreamHeader, int, error) {
	if len(b) < StreamHeaderLen {
		return StreamHeader{}, 0, io.EOF
	}
	return StreamHeader{
		RequestID: binary.BigEndian.Uint32(b),
		StreamTag: binary.BigEndian.Uint32(b[4:]),
	}, StreamHeaderLen, nil
}

// ReadStreamHeader reads a header from r. A stream that ends before 8 bytes
// gives io.ErrUnexpectedEOF (or io.EOF when it is empty).
func ReadStreamHeader(r io.Reader) (StreamHeader, error) {
	var b [StreamHeaderLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return StreamHeader{}, err
	}
	h, _, _ := ParseStreamHeader(b[:])
	return h, nil
}
