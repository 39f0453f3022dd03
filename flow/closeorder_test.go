package flow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
)

// qlogFrame is one QUIC frame of a packet in a qlog (quic-go's
// transport:packet_sent and packet_received events).
type qlogFrame struct {
	FrameType  string  `json:"frame_type"`
	StreamID   *int64  `json:"stream_id"`
	Offset     int64   `json:"offset"`
	Length     int64   `json:"length"`
	Fin        bool    `json:"fin"`
	ErrorSpace string  `json:"error_space"`
	ErrorCode  any     `json:"error_code"`
	Reason     string  `json:"reason"`
	Time       float64 `json:"-"`
	Sent       bool    `json:"-"`
}

// qlogFrames returns the frames of every packet in the qlog file at path,
// in order, each marked sent or received.
func qlogFrames(t *testing.T, path string) []qlogFrame {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []qlogFrame
	for _, rec := range bytes.Split(b, []byte{0x1e}) {
		var ev struct {
			Time float64
			Name string
			Data struct{ Frames []qlogFrame }
		}
		if json.Unmarshal(rec, &ev) != nil || (ev.Name != "transport:packet_sent" && ev.Name != "transport:packet_received") {
			continue
		}
		for _, f := range ev.Data.Frames {
			f.Time, f.Sent = ev.Time, ev.Name == "transport:packet_sent"
			out = append(out, f)
		}
	}
	return out
}

// TestCleanCloseOnTheWire: the receiver's close after a clean drain (spec
// §7.2, "The close on the wire"), as the server's qlog shows it. The server
// sends the WT_CLOSE_SESSION capsule (code 0, "shutdown complete") and the
// FIN on the CONNECT stream, with no STOP_SENDING or RESET_STREAM of that
// stream before the peer's answer: webtransport-go's own CloseWithError
// puts a STOP_SENDING ahead of the capsule in the same packet
// (quic-go/webtransport-go#242), which Chromium and Firefox read as an
// abrupt end (internal/closetest). The capsule goes 20 ms after the
// client's FIN on the control stream, not in the packet that acknowledges
// it. The client reads code 0 and the reason.
func TestCleanCloseOnTheWire(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(qlogdir.Env, dir)
	srv := startServer(t, nil)
	s := dial(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx, "bye"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	var se *flow.SessionError
	if !errors.As(s.Err(), &se) || se.Code != flow.CloseOK || !se.Remote || se.Reason != "shutdown complete" {
		t.Errorf("the client's end: %v; want the server's close, code 0, \"shutdown complete\"", s.Err())
	}
	if !qlogdir.Wait(10 * time.Second) {
		t.Fatal("qlog files still open 10 s after the session closed")
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*_server.sqlog"))
	if len(paths) != 1 {
		t.Fatalf("want one server qlog, got %v", paths)
	}
	// The CONNECT stream is the client's first bidirectional stream, 0.
	// Its close: one HTTP/3 DATA frame (2 bytes of header) holding the
	// capsule: type 0x2843 (2 bytes), length (1), code (4), reason.
	const capsuleFrame = 2 + 2 + 1 + 4 + len("shutdown complete")
	var trail []string
	// The capsule's frame may carry the FIN, or the FIN follows in a frame
	// of its own; a peer that reads the capsule first may answer (reset, or
	// close the connection) before that FIN goes, and then quic-go sends none.
	capsule, fin, answered := false, false, false
	peerFIN := -1.0 // when the server read the client's FIN on the control stream
	for _, f := range qlogFrames(t, paths[0]) {
		if f.StreamID != nil && *f.StreamID != 0 && !f.Sent && f.Fin && !capsule {
			peerFIN = f.Time
		}
		if !f.Sent && f.FrameType == "connection_close" && capsule {
			answered = true // flow's client closes its connection on reading the capsule
		}
		if f.StreamID == nil || *f.StreamID != 0 {
			continue
		}
		dir := "<-"
		if f.Sent {
			dir = "->"
		}
		code := f.ErrorCode
		if n, ok := code.(float64); ok {
			code = fmt.Sprintf("%#x", int64(n))
		}
		trail = append(trail, fmt.Sprintf("%s %.2f ms %s offset %d length %d fin %v error %v", dir, f.Time, f.FrameType, f.Offset, f.Length, f.Fin, code))
		if !f.Sent {
			if capsule {
				answered = true
				break // the peer's answer: what follows is no longer ours alone
			}
			continue
		}
		switch {
		case f.FrameType == "stop_sending" || f.FrameType == "reset_stream":
			t.Errorf("the server sent %s on the CONNECT stream before its capsule was answered", f.FrameType)
		case f.FrameType == "stream" && f.Length == int64(capsuleFrame):
			capsule = true
			// Not in the packet that acknowledges the client's FIN on the
			// control stream: Chromium would often read "Connection lost".
			if gap := f.Time - peerFIN; peerFIN < 0 || gap < 15 {
				t.Errorf("the capsule went %.2f ms after the client's FIN on the control stream (read at %.2f ms); want the close to settle 20 ms", gap, peerFIN)
			}
			fin = f.Fin
		case f.FrameType == "stream" && f.Fin:
			if !capsule || f.Length != 0 {
				t.Errorf("the FIN came with %d bytes, the close capsule's DATA frame (%d) not before it", f.Length, capsuleFrame)
			}
			fin = true
		}
	}
	if !capsule {
		t.Errorf("the server sent no close capsule")
	}
	if capsule && !fin && !answered {
		t.Errorf("the server never finished the CONNECT stream")
	}
	t.Logf("CONNECT stream (-> sent by the server, <- received):\n%s", strings.Join(trail, "\n"))
}
