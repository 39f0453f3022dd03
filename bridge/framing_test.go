package bridge

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"time"
)

func TestFramingRoundTrip(t *testing.T) {
	// Japanese text: Content-Length counts UTF-8 bytes, not characters.
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"こんにちは"}}}`)
	cl := AppendFramed(nil, ContentLength, msg)
	if want := "Content-Length: 110\r\n\r\n"; !bytes.HasPrefix(cl, []byte(want)) || len(msg) != 110 { // 95 ASCII bytes + 5 kana × 3
		t.Fatalf("header %q (message %d bytes)", cl[:24], len(msg))
	}
	nd := AppendFramed(nil, NDJSON, msg)
	batch := []byte(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`)
	in := append(append(append(append([]byte{}, cl...), nd...), "\r\n"...), AppendFramed(nil, ContentLength, batch)...)
	// One byte per read: messages split across reads.
	r := NewReader(iotest.OneByteReader(bytes.NewReader(in)))
	for i, want := range []struct {
		b []byte
		f Framing
	}{{msg, ContentLength}, {msg, NDJSON}, {batch, ContentLength}} {
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
			b, _, _ := NewReader(pr).Read()
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
		r := NewReader(bytes.NewReader([]byte(bad + ok + "\n")))
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
