package draft02_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/draft02"
	"github.com/mcp-flow/mcp-flow/internal/draft02/draft02test"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// TestV13CannotDialDraft02: the reason this package exists.
func TestV13CannotDialDraft02(t *testing.T) {
	p := draft02test.Start(t)
	tr := &webtransport.Transport{TLSClientConfig: p.TLS, QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true}}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, s, err := tr.Dial(ctx, p.URL, nil)
	if err == nil {
		s.CloseWithError(0, "")
		t.Fatal("webtransport-go v0.13 dialed a draft-02 server")
	}
	if !strings.Contains(err.Error(), "stream reset partial delivery") {
		t.Fatalf("error %v", err)
	}
}

func frame(t *testing.T, w io.Writer, m any) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(wire.AppendFrame(nil, b)); err != nil {
		t.Fatal(err)
	}
}

// open starts a peer and dials it; the context ends with the test.
func open(t *testing.T) (context.Context, *draft02.Session) {
	t.Helper()
	p := draft02test.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	_, s, err := draft02.Dial(ctx, p.URL, p.TLS, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, s
}

// TestSession: a draft-02 session carries the control stream both ways, an
// execution stream from the server, and the server's close.
func TestSession(t *testing.T) {
	ctx, s := open(t)
	defer s.CloseWithError(0, "")
	ctrl, err := s.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = ctrl.SetReadDeadline(time.Now().Add(15 * time.Second))
	fr := wire.NewFrameReader(ctrl, 1<<20)
	read := func() map[string]any {
		t.Helper()
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("control stream: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(f, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	frame(t, ctrl, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "transport": map[string]any{"type": "mcp-flow", "version": "0.1", "encodings": []string{"json"}}}})
	if m := read(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	if v := s.ConnectionState().TLS.Version; v != 0x0304 {
		t.Errorf("TLS version %#x", v)
	}
	const n = 300_000 // more than a stream's initial flow-control window
	frame(t, ctrl, map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": "generate", "arguments": map[string]int{"bytes": n}}})
	if m := read(); m["result"] == nil {
		t.Fatalf("tools/call: %v", m)
	}
	rs, err := s.AcceptUniStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var hdr [8]byte
	if _, err := io.ReadFull(rs, hdr[:]); err != nil {
		t.Fatal(err)
	}
	if id, tag := binary.BigEndian.Uint32(hdr[:4]), binary.BigEndian.Uint32(hdr[4:]); id != 7 || tag != 1 {
		t.Errorf("header (%d, %d), want (7, 1)", id, tag)
	}
	body, err := io.ReadAll(rs)
	if err != nil || len(body) != n || body[n-1] != byte((n-1)%251) {
		t.Fatalf("%d of %d bytes: %v", len(body), n, err)
	}
	frame(t, ctrl, map[string]any{"jsonrpc": "2.0", "method": "$/shutdown"})
	select {
	case <-s.Context().Done():
	case <-ctx.Done():
		t.Fatal("the server's close did not end the session")
	}
	var se *webtransport.SessionError
	if !errors.As(s.Err(), &se) || !se.Remote || se.ErrorCode != 0 {
		t.Fatalf("session ended with %v", s.Err())
	}
}

// TestCloseWithError: our close reaches the server, which ends the session.
func TestCloseWithError(t *testing.T) {
	ctx, s := open(t)
	ctrl, err := s.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	frame(t, ctrl, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"})
	if _, err := wire.NewFrameReader(ctrl, 1<<20).ReadFrame(); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseWithError(5, "bye"); err != nil {
		t.Fatal(err)
	}
	var se *webtransport.SessionError
	if !errors.As(s.Err(), &se) || se.Remote || se.ErrorCode != 5 {
		t.Fatalf("session ended with %v", s.Err())
	}
	if _, err := s.OpenStreamSync(ctx); err == nil {
		t.Fatal("a stream opened after the close")
	}
}
