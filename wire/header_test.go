package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestStreamHeaderExactBytes(t *testing.T) {
	// Guide §2.2: request 42, tag 1.
	h := StreamHeader{RequestID: 42, StreamTag: 1}
	want := []byte{0x00, 0x00, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x01}
	if got := h.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("Append = % x, want % x", got, want)
	}
	big := StreamHeader{RequestID: 0xFFFFFFFE, StreamTag: 0x01020304}
	if got := big.Append([]byte{9}); !bytes.Equal(got, []byte{9, 0xFF, 0xFF, 0xFF, 0xFE, 1, 2, 3, 4}) {
		t.Fatalf("Append = % x", got)
	}
	got, n, err := ParseStreamHeader(append(want, "payload"...))
	if err != nil || n != 8 || got != h {
		t.Fatalf("ParseStreamHeader = %+v, %d, %v", got, n, err)
	}
	r := bytes.NewReader(append(want, 'x'))
	if got, err := ReadStreamHeader(r); err != nil || got != h || r.Len() != 1 {
		t.Fatalf("ReadStreamHeader = %+v, %v, %d left", got, err, r.Len())
	}
}

func TestStreamHeaderTruncated(t *testing.T) {
	full := StreamHeader{RequestID: 42, StreamTag: 1}.Append(nil)
	for i := range len(full) {
		if _, _, err := ParseStreamHeader(full[:i]); err != io.EOF {
			t.Fatalf("ParseStreamHeader(%d bytes) = %v, want io.EOF", i, err)
		}
		_, err := ReadStreamHeader(bytes.NewReader(full[:i]))
		if want := map[bool]error{true: io.EOF, false: io.ErrUnexpectedEOF}[i == 0]; err != want {
			t.Fatalf("ReadStreamHeader(%d bytes) = %v, want %v", i, err, want)
		}
	}
}

func TestDatagramHeaderExactBytes(t *testing.T) {
	// Guide §2.3: progress for request 42.
	h := DatagramHeader{Channel: ChannelProgress, RequestID: 42}
	want := []byte{0x01, 0x00, 0x00, 0x00, 0x00, 0x2A}
	if got := h.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("Append = % x, want % x", got, want)
	}
	for _, c := range []Channel{ChannelProgress, ChannelAudio, ChannelLog} {
		d := DatagramHeader{Channel: c, RequestID: 0x0A0B0C0D}.Append(nil)
		d = append(d, 0xC0, 0xFF)
		got, p, err := ParseDatagram(d)
		if err != nil || got.Channel != c || got.RequestID != 0x0A0B0C0D || !bytes.Equal(p, []byte{0xC0, 0xFF}) {
			t.Fatalf("ParseDatagram(% x) = %+v, % x, %v", d, got, p, err)
		}
	}
	// Session-wide: request id 0, empty payload.
	if got, p, err := ParseDatagram([]byte{3, 0, 0, 0, 0, 0}); err != nil || got.RequestID != 0 || len(p) != 0 {
		t.Fatalf("session-wide log datagram: %+v, %v", got, err)
	}
}

func TestDatagramHeaderRejects(t *testing.T) {
	full := DatagramHeader{Channel: ChannelLog, RequestID: 7}.Append(nil)
	for i := range len(full) {
		if _, _, err := ParseDatagram(full[:i]); err != io.EOF {
			t.Fatalf("ParseDatagram(%d bytes) = %v, want io.EOF", i, err)
		}
	}
	for _, bad := range [][]byte{
		{0x00, 0, 0, 0, 0, 1},    // reserved channel
		{0x04, 0, 0, 0, 0, 1},    // unknown channel
		{0xFF, 0, 0, 0, 0, 1},    // unknown channel
		{0x01, 0x01, 0, 0, 0, 1}, // flags set
		{0x01, 0x80, 0, 0, 0, 1}, // flags set
	} {
		var he *HeaderError
		if _, _, err := ParseDatagram(bad); !errors.As(err, &he) || he.What != "datagram" {
			t.Fatalf("ParseDatagram(% x) = %v, want a *HeaderError", bad, err)
		}
	}
}

func FuzzStreamHeader(f *testing.F) {
	f.Add(StreamHeader{RequestID: 42, StreamTag: 1}.Append(nil))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := ParseStreamHeader(b)
		if err != nil {
			if len(b) >= StreamHeaderLen {
				t.Fatalf("rejected %d bytes: %v", len(b), err)
			}
			return
		}
		if !bytes.Equal(h.Append(nil), b[:n]) {
			t.Fatal("round trip differs")
		}
	})
}

func FuzzDatagram(f *testing.F) {
	f.Add(DatagramHeader{Channel: ChannelProgress, RequestID: 42}.Append([]byte(nil)))
	f.Add(append(DatagramHeader{Channel: ChannelAudio, RequestID: 1}.Append(nil), 0xa1, 0x61, 0x61, 0x01))
	f.Add([]byte{0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, err := ParseDatagram(b)
		if err != nil {
			return
		}
		if !h.Channel.Known() || h.Flags != 0 {
			t.Fatalf("accepted header %+v", h)
		}
		if re := append(h.Append(nil), p...); !bytes.Equal(re, b) {
			t.Fatal("round trip differs")
		}
	})
}
