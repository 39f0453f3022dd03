package wire

import (
	"encoding/binary"
	"io"
	"strconv"
)

// DatagramHeaderLen is the size of a datagram header (spec §3.3).
const DatagramHeaderLen = 6

// Channel identifies what a datagram carries (guide §2.3).
type Channel uint8

// The datagram channels of MCP-Flow 0.1.
const (
	ChannelReserved Channel = 0x00 // never sent; a datagram on it is rejected
	ChannelProgress Channel = 0x01
	ChannelAudio    Channel = 0x02
	ChannelLog      Channel = 0x03
)

func (c Channel) String() string {
	switch c {
	case ChannelReserved:
		return "reserved"
	case ChannelProgress:
		return "progress"
	case ChannelAudio:
		return "audio"
	case ChannelLog:
		return "log"
	}
	return "channel 0x" + strconv.FormatUint(uint64(c), 16)
}

// Known reports whether c is a channel a datagram may be sent on.
func (c Channel) Known() bool { return c >= ChannelProgress && c <= ChannelLog }

// DatagramHeader opens every datagram (spec §3.3, guide §2.3). RequestID 0
// means session-wide. Flags must be 0 in MCP-Flow 0.1.
type DatagramHeader struct {
	Channel   Channel
	Flags     uint8
	RequestID uint32
}

// Append appends the 6-byte header to b.
func (h DatagramHeader) Append(b []byte) []byte {
	b = append(b, byte(h.Channel), h.Flags)
	return binary.BigEndian.AppendUint32(b, h.RequestID)
}

// ParseDatagram splits a datagram into its header and payload (aliasing b).
// It returns io.EOF when b is shorter than the header, and a *HeaderError for
// the reserved channel, an unknown channel or non-zero flags.
func ParseDatagram(b []byte) (DatagramHeader, []byte, error) {
	if len(b) < DatagramHeaderLen {
		return DatagramHeader{}, nil, io.EOF
	}
	h := DatagramHeader{
		Channel:   Channel(b[0]),
		Flags:     b[1],
		RequestID: binary.BigEndian.Uint32(b[2:]),
	}
	if !h.Channel.Known() {
		return h, nil, &HeaderError{What: "datagram", Reason: h.Channel.String() + " is not a datagram channel"}
	}
	if h.Flags != 0 {
		return h, nil, &HeaderError{What: "datagram", Reason: "flags 0x" + strconv.FormatUint(uint64(h.Flags), 16) + " set; MCP-Flow 0.1 defines none"}
	}
	return h, b[DatagramHeaderLen:], nil
}
