package wire

import (
	"errors"
	"strconv"
)

// ErrZeroLength is returned for a control frame that declares a length of
// zero (spec §3.1): no JSON-RPC message is empty.
var ErrZeroLength = errors.New("wire: control frame of length 0")

// FrameTooLargeError is returned for a control frame whose declared length
// exceeds the reader's limit (spec §3.1). Nothing is allocated or read past the
// 4-byte length prefix.
type FrameTooLargeError struct {
	Length uint32 // the declared length
	Max    uint32 // the limit in force
}

var _ error = (*FrameTooLargeError)(nil)

func (e *FrameTooLargeError) Error() string {
	return "wire: control frame of " + strconv.FormatUint(uint64(e.Length), 10) +
		" bytes exceeds the limit of " + strconv.FormatUint(uint64(e.Max), 10)
}

// HeaderError is returned for a malformed execution stream or datagram
// header (spec §3.2, §3.3).
type HeaderError struct {
	What   string // "datagram" or "stream"
	Reason string
}

var _ error = (*HeaderError)(nil)

func (e *HeaderError) Error() string { return "wire: bad " + e.What + " header: " + e.Reason }
