// Package hostile is an attacker's toolkit for the hostile-peer suite
// (issue 11; spec §8.3 "Measured bounds", §9): raw WebTransport sessions
// that write arbitrary bytes on the control stream, open unidirectional
// streams with any header and send any datagram (Peer); raw stdio input to
// a stdio server such as the stdio front (Stdio); a well-behaved session
// whose ping latency an attack must not spoil (Observer); and meters for a
// server running as a subprocess (its resident memory, threads and CPU
// time from /proc, its live heap from GODEBUG=gctrace=1).
//
// Nothing here follows the protocol on its own: a Peer writes what it is
// told, when it is told, and reads only when asked. The well-behaved side of
// a test uses package flow.
package hostile

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"

	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
	"github.com/mcp-flow/mcp-flow/wire"
)

// Peer is a raw WebTransport session and its control stream (the first
// bidirectional stream, spec §3.1). Its methods may be called from one
// goroutine for writing and another for reading.
type Peer struct {
	Sess *webtransport.Session
	Ctrl *webtransport.Stream
	tr   *webtransport.Transport
}

// Dial opens a WebTransport session to url and its control stream, and
// writes nothing on it. Its QUIC settings are quic-go's defaults, with
// datagrams and up to 1000 incoming unidirectional streams.
func Dial(ctx context.Context, url string, tlsConf *tls.Config, h http.Header) (*Peer, error) {
	return DialQUIC(ctx, url, tlsConf, h, &quic.Config{MaxIncomingUniStreams: 1000, Tracer: qlogdir.Tracer()})
}

// DialQUIC is Dial with QUIC settings of the caller's (datagrams and
// partial delivery are turned on in qc).
func DialQUIC(ctx context.Context, url string, tlsConf *tls.Config, h http.Header, qc *quic.Config) (*Peer, error) {
	qc = qc.Clone()
	qc.EnableDatagrams, qc.EnableStreamResetPartialDelivery = true, true
	tr := &webtransport.Transport{TLSClientConfig: tlsConf, QUICConfig: qc}
	_, sess, err := tr.Dial(ctx, url, h)
	if err != nil {
		tr.Close()
		return nil, err
	}
	ctrl, err := sess.OpenStreamSync(ctx)
	if err != nil {
		sess.CloseWithError(0, "")
		tr.Close()
		return nil, err
	}
	return &Peer{Sess: sess, Ctrl: ctrl, tr: tr}, nil
}

// Close ends the session and the connection under it.
func (p *Peer) Close() {
	p.Sess.CloseWithError(0, "")
	p.tr.Close()
}

// Done is closed when the session has ended, for whatever reason.
func (p *Peer) Done() <-chan struct{} { return p.Sess.Context().Done() }

// Write writes b on the control stream as it is: a frame, part of one,
// garbage.
func (p *Peer) Write(b []byte) error {
	_, err := p.Ctrl.Write(b)
	return err
}

// WriteFrame writes payload as one control frame (a 4-byte big-endian
// length, then the payload; spec §3.1).
func (p *Peer) WriteFrame(payload []byte) error {
	return p.Write(wire.AppendFrame(make([]byte, 0, 4+len(payload)), payload))
}

// ReadFrame reads one control frame of at most max bytes, bounded by ctx
// (its deadline, or its end).
func (p *Peer) ReadFrame(ctx context.Context, max int) ([]byte, error) {
	if d, ok := ctx.Deadline(); ok {
		p.Ctrl.SetReadDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { p.Ctrl.SetReadDeadline(time.Now()) })
	defer func() {
		stop()
		p.Ctrl.SetReadDeadline(time.Time{})
	}()
	var hdr [4]byte
	if _, err := io.ReadFull(p.Ctrl, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > max {
		return nil, fmt.Errorf("hostile: a frame of %d bytes, more than the %d expected", n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(p.Ctrl, b); err != nil {
		return nil, err
	}
	return b, nil
}

// InitializeJSON is an initialize request (id 0) that asks for enc.
func InitializeJSON(enc string) []byte { return initialize(enc, "") }

func initialize(enc, extra string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},` +
		`"clientInfo":{"name":"hostile","version":"0"},"transport":{"type":"mcp-flow","version":"0.1","encodings":["` + enc + `"]` + extra + `}}}`)
}

// InitializeJSONSession initializes the session in JSON: initialize, its
// result, notifications/initialized. Without datagrams, it refuses them
// (this project's "datagrams": false, spec §4.1).
func (p *Peer) InitializeJSONSession(ctx context.Context, datagrams bool) error {
	extra := ""
	if !datagrams {
		extra = `,"datagrams":false`
	}
	if err := p.WriteFrame(initialize("json", extra)); err != nil {
		return err
	}
	b, err := p.ReadFrame(ctx, 1<<20)
	if err != nil {
		return err
	}
	if r, err := ParseReply(b); err != nil || r.Code != 0 {
		return fmt.Errorf("hostile: initialize answered %s", b)
	}
	return p.WriteFrame([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

// Reply is what a test needs from one JSON reply or notification.
type Reply struct {
	ID      string // the raw JSON id; "" for a notification
	Method  string // a notification's method
	Code    int    // the error code; 0 for a result
	Message string // the error message
	Params  json.RawMessage
	Result  json.RawMessage
}

// ParseReply reads one JSON message (not a batch).
func ParseReply(b []byte) (Reply, error) {
	var m struct {
		ID     json.RawMessage
		Method string
		Params json.RawMessage
		Result json.RawMessage
		Error  *struct {
			Code    int
			Message string
		}
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Reply{}, fmt.Errorf("hostile: not one JSON message: %w: %.200q", err, b)
	}
	r := Reply{ID: string(m.ID), Method: m.Method, Params: m.Params, Result: m.Result}
	if m.Error != nil {
		r.Code, r.Message = m.Error.Code, m.Error.Message
	}
	return r, nil
}

// ReadReply reads one frame and parses it as JSON.
func (p *Peer) ReadReply(ctx context.Context) (Reply, error) {
	b, err := p.ReadFrame(ctx, 1<<20)
	if err != nil {
		return Reply{}, err
	}
	return ParseReply(b)
}

// OpenUni opens a unidirectional stream, writes b on it and finishes it.
// Only the open can fail: the server may stop the stream (STOP_SENDING)
// before it is written or finished, which is its answer, not an error.
func (p *Peer) OpenUni(ctx context.Context, b []byte) error {
	st, err := p.Sess.OpenUniStreamSync(ctx)
	if err != nil {
		return err
	}
	_, _ = st.Write(b)
	_ = st.Close()
	return nil
}

// SendDatagram sends b as one datagram of the session.
func (p *Peer) SendDatagram(b []byte) error { return p.Sess.SendDatagram(b) }

// ErrStillRunning says that a process outlived its deadline.
var ErrStillRunning = errors.New("hostile: the process is still running")
