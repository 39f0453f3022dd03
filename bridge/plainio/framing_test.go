package plainio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestFramingRoundTrip(t *testing.T) {
	// Japanese text: Content-Length counts UTF-8 bytes, not characters.
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"こんにちは"}}}`)
	cl := AppendFramed(nil, FramingContentLength, msg)
	if want := "Content-Length: 110\r\n\r\n"; !bytes.HasPrefix(cl, []byte(want)) || len(msg) != 110 { // 95 ASCII bytes + 5 kana × 3
		t.Fatalf("header %q (message %d bytes)", cl[:24], len(msg))
	}
	nd := AppendFramed(nil, FramingNDJSON, msg)
	batch := []byte(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`)
	in := append(append(append(append([]byte{}, cl...), nd...), "\r\n"...), AppendFramed(nil, FramingContentLength, batch)...)
	// One byte per read: messages split across reads.
	r := NewFrameReader(iotest.OneByteReader(bytes.NewReader(in)), MaxMessage)
	for i, want := range []struct {
		b []byte
		f Framing
	}{{msg, FramingContentLength}, {msg, FramingNDJSON}, {batch, FramingContentLength}} {
		got, f, err := r.Read()
		if err != nil || f != want.f || !bytes.Equal(got, want.b) {
			t.Fatalf("message %d: %q (%v), %v", i, got, f, err)
		}
	}
	if _, _, err := r.Read(); err != io.EOF {
		t.Fatalf("at end: %v", err)
	}
}

// TestShortMessageReadAtOnce: a message shorter than "Content-Length:" is
// read without waiting for more input (the stdio front once held "[]" or a
// short line of garbage until the host wrote something else; found by
// internal/hostile's TestStdioFront).
func TestShortMessageReadAtOnce(t *testing.T) {
	for _, msg := range []string{"[]", "\x00\xff{{{", "{}", "Content-Len", "C"} {
		pr, pw := io.Pipe()
		go pw.Write([]byte(msg + "\n")) // and nothing more until the pipe is closed
		got := make(chan []byte, 1)
		go func() {
			b, _, _ := NewFrameReader(pr, MaxMessage).Read()
			got <- b
		}()
		select {
		case b := <-got:
			if string(b) != msg {
				t.Errorf("%q: read %q", msg, b)
			}
			pw.Close()
		case <-time.After(5 * time.Second):
			t.Errorf("%q: not read in 5 s without more input", msg)
			pw.Close() // the read ends
			<-got
		}
	}
}

func TestFramingErrorsDoNotWedge(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":9,"method":"ping"}`
	for name, bad := range map[string]string{
		"BOM":           "\xef\xbb\xbf" + ok + "\n",
		"broken header": "Content-Length: 12\r\nno colon here\r\n\r\n",
		"bad length":    "Content-Length: -5\r\n\r\n",
	} {
		r := NewFrameReader(bytes.NewReader([]byte(bad+ok+"\n")), MaxMessage)
		var fe *FramingError
		var got []byte
		var err error
		for range 4 {
			got, _, err = r.Read()
			if errors.As(err, &fe) {
				continue
			}
			break
		}
		if fe == nil {
			t.Errorf("%s: no FramingError", name)
		}
		if string(got) != ok {
			t.Errorf("%s: the next message was %q, %v", name, got, err)
		}
	}
}

// TestFrameReaderLimit crosses the reader's message limit in both framings:
// a message of exactly the limit is read (across many buffer fills), one
// byte more is skipped with a FramingError, nothing of it kept, and the
// next message is read.
func TestFrameReaderLimit(t *testing.T) {
	const limit = 100 << 10 // more than the reader's 64 KiB buffer
	ok := `{"jsonrpc":"2.0","id":9,"method":"ping"}`
	at := `"` + strings.Repeat("a", limit-2) + `"`
	over := at + " "
	for name, in := range map[string]string{
		"NDJSON":         at + "\r\n" + over + "\n" + ok + "\n",
		"Content-Length": string(AppendFramed(AppendFramed(nil, FramingContentLength, []byte(at)), FramingContentLength, []byte(over))) + ok + "\n",
	} {
		r := NewFrameReader(strings.NewReader(in), limit)
		if got, _, err := r.Read(); err != nil || string(got) != at {
			t.Fatalf("%s: a message of the limit: %d bytes, %v", name, len(got), err)
		}
		var fe *FramingError
		if got, _, err := r.Read(); !errors.As(err, &fe) || got != nil {
			t.Fatalf("%s: a message over the limit: %d bytes, %v", name, len(got), err)
		}
		if got, _, err := r.Read(); err != nil || string(got) != ok {
			t.Fatalf("%s: after the skipped message: %q, %v", name, got, err)
		}
		if _, _, err := r.Read(); err != io.EOF {
			t.Fatalf("%s: at the end: %v", name, err)
		}
	}
}

// TestReadLine: SSE lines end in LF, CR or CRLF (WHATWG HTML §9.2.5), across
// buffer boundaries; a line past the limit is an error, not an allocation.
func TestReadLine(t *testing.T) {
	in := "a\rb\r\nc\n\n" + strings.Repeat("x", 100) + "\r\n"
	br := bufio.NewReaderSize(strings.NewReader(in), 16) // lines span many fills
	var got []string
	for {
		line, err := ReadLine(br, 100)
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		got = append(got, string(line))
	}
	want := []string{"a", "b", "c", "", strings.Repeat("x", 100)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lines %q", got)
	}
	if _, err := ReadLine(bufio.NewReaderSize(strings.NewReader(strings.Repeat("y", 101)+"\n"), 16), 100); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("a line over the limit: %v", err)
	}
}
