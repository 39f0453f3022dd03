package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

// initialize is the guide's §2.1 example. Its length is computed from the
// bytes: the guide's 78 and 218 are both wrong (it is 227).
const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"test","version":"1.0"},"transport":{"type":"mcp-flow","version":"0.1","encodings":["cbor","json"]}}}`

func TestAppendFrameInitializeExactBytes(t *testing.T) {
	if len(initialize) != 227 {
		t.Fatalf("the guide's initialize example is %d bytes, want 227", len(initialize))
	}
	got := AppendFrame(nil, []byte(initialize))
	want := append([]byte{0x00, 0x00, 0x00, 0xE3}, initialize...)
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendFrame = % x..., want % x...", got[:8], want[:8])
	}
	fr := NewFrameReader(bytes.NewReader(got), 0)
	p, err := fr.ReadFrame()
	if err != nil || string(p) != initialize {
		t.Fatalf("ReadFrame = %q, %v", p, err)
	}
	if _, err := fr.ReadFrame(); err != io.EOF {
		t.Fatalf("ReadFrame at end = %v, want io.EOF", err)
	}
}

func TestBeginFinishFrame(t *testing.T) {
	b := BeginFrame([]byte{0xAA})
	b = append(b, "hello"...)
	if err := FinishFrame(b, 1, 0); err != nil {
		t.Fatal(err)
	}
	if want := []byte{0xAA, 0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'}; !bytes.Equal(b, want) {
		t.Fatalf("got % x, want % x", b, want)
	}
	if err := FinishFrame(BeginFrame(nil), 0, 0); err != ErrZeroLength {
		t.Fatalf("empty frame: %v, want ErrZeroLength", err)
	}
	var tl *FrameTooLargeError
	if err := FinishFrame(append(BeginFrame(nil), "hello"...), 0, 4); !errors.As(err, &tl) || tl.Length != 5 || tl.Max != 4 {
		t.Fatalf("oversized frame: %v", err)
	}
}

func TestReadFrameTruncated(t *testing.T) {
	full := AppendFrame(nil, []byte(initialize))
	for i := range len(full) {
		_, err := NewFrameReader(bytes.NewReader(full[:i]), 0).ReadFrame()
		switch {
		case i == 0 && err != io.EOF:
			t.Fatalf("empty input: %v, want io.EOF", err)
		case i > 0 && err != io.ErrUnexpectedEOF:
			t.Fatalf("prefix of %d bytes: %v, want io.ErrUnexpectedEOF", i, err)
		}
		if _, _, err := ParseFrame(full[:i], 0); err != io.EOF {
			t.Fatalf("ParseFrame of %d bytes: %v, want io.EOF", i, err)
		}
	}
}

func TestReadFrameLimits(t *testing.T) {
	t.Run("4GiB length allocates nothing", func(t *testing.T) {
		in := []byte{0xFF, 0xFF, 0xFF, 0xFF, 'x'}
		var err error
		br := bytes.NewReader(in)
		fr := NewFrameReader(br, 0)
		allocs := testing.AllocsPerRun(100, func() {
			br.Reset(in)
			_, err = fr.ReadFrame()
		})
		var tl *FrameTooLargeError
		if !errors.As(err, &tl) || tl.Length != 0xFFFFFFFF || tl.Max != DefaultMaxFrameSize {
			t.Fatalf("err = %v", err)
		}
		if allocs > 1 { // the error value
			t.Fatalf("ReadFrame allocated %v times for a rejected frame", allocs)
		}
		if !strings.Contains(err.Error(), "4294967295") {
			t.Fatalf("error does not say the length: %v", err)
		}
	})
	t.Run("one past the limit", func(t *testing.T) {
		in := AppendFrame(nil, bytes.Repeat([]byte{'a'}, 101))
		_, err := NewFrameReader(bytes.NewReader(in), 100).ReadFrame()
		var tl *FrameTooLargeError
		if !errors.As(err, &tl) || tl.Length != 101 {
			t.Fatalf("err = %v", err)
		}
		p, err := NewFrameReader(bytes.NewReader(in), 101).ReadFrame()
		if err != nil || len(p) != 101 {
			t.Fatalf("at the limit: %d bytes, %v", len(p), err)
		}
		if _, _, err := ParseFrame(in, 100); !errors.As(err, &tl) {
			t.Fatalf("ParseFrame: %v", err)
		}
	})
	t.Run("zero length", func(t *testing.T) {
		_, err := NewFrameReader(bytes.NewReader([]byte{0, 0, 0, 0}), 0).ReadFrame()
		if err != ErrZeroLength {
			t.Fatalf("err = %v, want ErrZeroLength", err)
		}
		if _, _, err := ParseFrame([]byte{0, 0, 0, 0}, 0); err != ErrZeroLength {
			t.Fatalf("ParseFrame err = %v", err)
		}
	})
	t.Run("declared large, sent little", func(t *testing.T) {
		// 16 MiB declared, 10 bytes sent: the reader must not have grown a
		// 16 MiB buffer.
		in := binary.BigEndian.AppendUint32(nil, DefaultMaxFrameSize)
		in = append(in, "0123456789"...)
		fr := NewFrameReader(bytes.NewReader(in), 0)
		if _, err := fr.ReadFrame(); err != io.ErrUnexpectedEOF {
			t.Fatalf("err = %v", err)
		}
		if cap(fr.buf) > 64<<10 {
			t.Fatalf("buffer grew to %d bytes for 10 received", cap(fr.buf))
		}
	})
}

func TestReadFrameSequenceAndReuse(t *testing.T) {
	var in []byte
	sizes := []int{1, 70000, 3, 200000, 5}
	for i, n := range sizes {
		in = AppendFrame(in, bytes.Repeat([]byte{byte('a' + i)}, n))
	}
	// A reader that returns one byte at a time: frames split across reads.
	fr := NewFrameReader(&oneByteReader{bytes.NewReader(in)}, 0)
	for i, n := range sizes {
		p, err := fr.ReadFrame()
		if err != nil || len(p) != n || p[0] != byte('a'+i) || p[n-1] != byte('a'+i) {
			t.Fatalf("frame %d: %d bytes, %v", i, len(p), err)
		}
	}
	rest := in
	for i, n := range sizes {
		p, k, err := ParseFrame(rest, 0)
		if err != nil || len(p) != n || k != n+4 {
			t.Fatalf("ParseFrame %d: %d, %d, %v", i, len(p), k, err)
		}
		rest = rest[k:]
	}
}

type oneByteReader struct{ r io.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

func FuzzReadFrame(f *testing.F) {
	f.Add(AppendFrame(nil, []byte(initialize)), uint32(0))
	f.Add(AppendFrame(AppendFrame(nil, []byte(`{"jsonrpc":"2.0","id":43,"method":"ping"}`)), []byte{0xa1}), uint32(64))
	f.Add([]byte{0, 0, 0, 0}, uint32(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint32(0))
	f.Fuzz(func(t *testing.T, data []byte, max uint32) {
		max = max%(1<<20) + 1
		fr := NewFrameReader(bytes.NewReader(data), max)
		rest := data
		for {
			p, err := fr.ReadFrame()
			q, n, perr := ParseFrame(rest, max)
			if err != nil {
				if perr == nil {
					t.Fatalf("ReadFrame failed (%v) where ParseFrame succeeded", err)
				}
				return
			}
			if perr != nil || !bytes.Equal(p, q) {
				t.Fatalf("ReadFrame and ParseFrame disagree: %v", perr)
			}
			if len(p) == 0 || uint32(len(p)) > max {
				t.Fatalf("frame of %d bytes passed a limit of %d", len(p), max)
			}
			if re := AppendFrame(nil, p); !bytes.Equal(re, rest[:n]) {
				t.Fatal("re-encoding differs")
			}
			rest = rest[n:]
		}
	})
}

// TestReadFrameReleasesLargeBuffer: after a frame larger than
// RetainedFrameBuffer, the next ReadFrame drops that buffer, so a session
// that sent one 16 MiB frame and went idle does not keep 16 MiB (spec §8).
func TestReadFrameReleasesLargeBuffer(t *testing.T) {
	var in []byte
	for _, n := range []int{RetainedFrameBuffer, 10, 1 << 20, 10, 20} {
		in = AppendFrame(in, bytes.Repeat([]byte{'x'}, n))
	}
	fr := NewFrameReader(bytes.NewReader(in), 0)
	for i := range 5 {
		p, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		// A frame up to the threshold keeps its buffer for the next one; a
		// larger one gets a buffer of its own, dropped at the next read.
		if big := len(p) > RetainedFrameBuffer; big != (cap(fr.buf) > RetainedFrameBuffer) {
			t.Fatalf("after frame %d (%d bytes): buffer capacity %d, threshold %d", i, len(p), cap(fr.buf), RetainedFrameBuffer)
		}
	}
}

// TestReadFrameWaitsHoldingNoBuffer: a FrameReader that waits for the next
// frame holds no buffer, whatever it read before, so that an idle session
// costs no frame memory (docs/BENCHMARKS.md, idle sessions): the reader
// below checks, each time it is asked for bytes with none left, that the
// FrameReader asks for a length prefix alone and holds nothing.
func TestReadFrameWaitsHoldingNoBuffer(t *testing.T) {
	var in []byte
	sizes := []int{10, readAheadSize, readAheadSize + 1, RetainedFrameBuffer, RetainedFrameBuffer + 1, 3}
	for i, n := range sizes {
		in = AppendFrame(in, bytes.Repeat([]byte{byte('a' + i)}, n))
	}
	src := bytes.NewReader(in)
	var fr *FrameReader
	waits := 0
	fr = NewFrameReader(readerFunc(func(p []byte) (int, error) {
		// A length prefix asked of r in full: nothing is read ahead,
		// and in a live session this is the wait for the next frame.
		if len(p) == FrameHeaderLen {
			waits++
			if fr.ahead != nil || fr.mid != nil || fr.buf != nil {
				t.Errorf("waiting for frame %d, the reader holds buffers: read-ahead %v, pooled %v, own %d bytes", waits, fr.ahead != nil, fr.mid != nil, cap(fr.buf))
			}
		}
		return src.Read(p)
	}), 0)
	for i, n := range sizes {
		p, err := fr.ReadFrame()
		if err != nil || len(p) != n || p[0] != byte('a'+i) || p[n-1] != byte('a'+i) {
			t.Fatalf("frame %d: %d bytes, %v", i, len(p), err)
		}
	}
	if _, err := fr.ReadFrame(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
	if waits < 3 {
		t.Fatalf("the reader waited %d times for a prefix between frames, want at least 3", waits)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// TestReadFrameOwned: a payload that ReadFrame reports as Owned (a frame
// larger than RetainedFrameBuffer) keeps its bytes through the reads that
// follow, so the caller may keep it uncopied; one in a pooled buffer is
// not Owned (the next frame of its size reuses the buffer).
func TestReadFrameOwned(t *testing.T) {
	sizes := []int{40000, 200000, 40001, 300000, 5, RetainedFrameBuffer, 4096}
	var in []byte
	for i, n := range sizes {
		in = AppendFrame(in, bytes.Repeat([]byte{byte('a' + i)}, n))
	}
	fr := NewFrameReader(bytes.NewReader(in), 0)
	kept := map[int][]byte{}
	for i, n := range sizes {
		p, err := fr.ReadFrame()
		if err != nil || len(p) != n {
			t.Fatalf("frame %d: %d bytes, %v", i, len(p), err)
		}
		if fr.Owned() != (n > RetainedFrameBuffer) {
			t.Errorf("frame %d of %d bytes: Owned %v", i, n, fr.Owned())
		}
		if fr.Owned() {
			kept[i] = p
		}
	}
	for i, p := range kept {
		if !bytes.Equal(p, bytes.Repeat([]byte{byte('a' + i)}, sizes[i])) {
			t.Errorf("frame %d kept: its bytes changed after the reads that followed", i)
		}
	}
}
