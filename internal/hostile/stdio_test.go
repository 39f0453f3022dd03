package hostile

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
)

// TestStdioFront: a host writes hostile input to the stdio front (`mcp-flow
// bridge stdio`, spec §10): a line longer than bridge.MaxMessage (64 MiB),
// JSON nested 100,000 deep, a line of garbage. Each gets a -32700 with a
// null id and the front reads on (its ping is answered); its peak RSS stays
// within 3 × MaxMessage (the line is gathered up to MaxMessage in a buffer
// that doubles, and the GC has not yet taken back the smaller ones: 130
// MiB measured; 211-272 MiB when append grew it by quarters);
// the server's other sessions do not notice. Then a
// Content-Length of 2^62 is skipped without allocating, and at EOF the front
// exits 0. A message shorter than "Content-Length:" is answered at once
// (the front once waited for more input before reading it).
func TestStdioFront(t *testing.T) {
	e := setup(t)
	st := StartStdio(t, cliBin, "-url", e.srv.URL, "-cert-hash", e.srv.Hash, "bridge", "stdio")
	read := func(what string) Reply {
		t.Helper()
		for {
			l, err := st.ReadLine(e.ctx)
			if err != nil {
				t.Fatalf("%s: %v; front stderr:\n%s", what, err, st.Stderr)
			}
			r, err := ParseReply(l)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if r.Method == "" {
				return r
			}
		}
	}
	st.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hostile","version":"0"}}}` + "\n"))
	if r := read("initialize"); r.Code != 0 || r.ID != "0" {
		t.Fatalf("initialize: %+v", r)
	}
	st.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	base, err := ReadMem(st.PID())
	if err != nil {
		t.Fatal(err)
	}
	long := append(bytes.Repeat([]byte("x"), bridge.MaxMessage+1<<20), '\n')
	shots := []struct {
		name string
		b    []byte
	}{
		{"a line of MaxMessage + 1 MiB", long},
		{"JSON nested 100,000 deep", []byte(strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n")},
		{"garbage", []byte("\x00\xff{{{\n")},
	}
	e.during(func() {
		for i, s := range shots {
			if err := st.Write(s.b); err != nil {
				t.Fatalf("%s: %v; front stderr:\n%s", s.name, err, st.Stderr)
			}
			if r := read(s.name); r.Code != codeParse || r.ID != "null" {
				t.Fatalf("%s: got id %s code %d %q, want -32700 with a null id", s.name, r.ID, r.Code, r.Message)
			}
			st.Write([]byte(`{"jsonrpc":"2.0","id":` + string(rune('1'+i)) + `,"method":"ping"}` + "\n"))
			if r := read(s.name + ", then a ping"); r.Code != 0 || r.ID != string(rune('1'+i)) {
				t.Fatalf("%s, then a ping: got %+v", s.name, r)
			}
		}
	})
	m, err := ReadMem(st.PID())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("measured: stdio front before %v; after %v", base, m)
	if d := m.HWM - base.HWM; d > 3*bridge.MaxMessage {
		t.Errorf("the stdio front's peak RSS grew by %s for a line of %s", mib(d), mib(int64(len(long))))
	}
	// A Content-Length of 2^62: skipped (read and discarded) until EOF.
	t0 := time.Now()
	st.Write([]byte("Content-Length: 4611686018427387904\r\n\r\n{}"))
	st.In.Close()
	for {
		if _, err := st.ReadLine(e.ctx); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("stdout after EOF on stdin: %v; front stderr:\n%s", err, st.Stderr)
		}
	}
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	if err := st.Wait(ctx); err != nil {
		t.Fatalf("the stdio front after a Content-Length of 2^62 and EOF: %v; stderr:\n%s", err, st.Stderr)
	}
	t.Logf("measured: the stdio front exited 0 %v after a Content-Length of 2^62 and EOF", time.Since(t0).Round(time.Millisecond))
	e.alive()
}
