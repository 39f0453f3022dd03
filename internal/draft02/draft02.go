// Package draft02 dials WebTransport sessions in the dialect of
// draft-ietf-webtrans-http3-02, the one webtransport-go v0.6 speaks and the
// published MCP-Flow v0.1 examples serve. webtransport-go v0.13 refuses
// these servers ("server didn't enable QUIC stream reset partial delivery",
// and they announce SETTINGS_ENABLE_WEBTRANSPORT, not SETTINGS_WT_ENABLED).
//
// The dialect, as quic-go's http3 package carries it:
//   - SETTINGS: ENABLE_WEBTRANSPORT (0x2b603742) = 1 and H3_DATAGRAM (the
//     server need not announce extended CONNECT);
//   - an extended CONNECT with :protocol "webtransport" and the header
//     Sec-Webtransport-Http3-Draft02: 1, answered 2xx;
//   - the session id is the CONNECT stream's id; a bidirectional stream
//     starts with the varints 0x41 and the session id, a unidirectional one
//     with 0x54 and the session id;
//   - datagrams are HTTP/3 datagrams of the CONNECT stream (RFC 9297);
//   - stream error codes are mapped into the HTTP/3 range from
//     0x52e4a40fa8db, as in later drafts;
//   - the session ends with a CLOSE_WEBTRANSPORT_SESSION capsule (0x2843:
//     a 4-byte code and a message) or the end of the CONNECT stream.
//
// Errors carry webtransport-go v0.13's types (*webtransport.StreamError,
// *webtransport.SessionError), so that code written for v0.13 sessions reads
// them alike. One session has one QUIC connection of its own.
package draft02

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
	"github.com/quic-go/webtransport-go"

	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
)

// The draft-02 constants.
const (
	settingEnableWebTransport = 0x2b603742
	draftHeader               = "Sec-Webtransport-Http3-Draft02"
	protocol                  = "webtransport"
	bidiSignal                = 0x41
	uniStreamType             = 0x54
	closeCapsule              = 0x2843
	firstErrorCode            = 0x52e4a40fa8db
	lastErrorCode             = 0x52e5ac983162
	// sessionGoneCode is what webtransport-go v0.6 resets a session's
	// streams with when the session ends.
	sessionGoneCode quic.StreamErrorCode = 0x170d7b68
)

// CloseLinger bounds how long CloseWithError waits for the peer to end the
// CONNECT stream after the close capsule before it closes the QUIC
// connection (which would otherwise discard the capsule in flight).
const CloseLinger = time.Second

// Dial opens a draft-02 session at urlStr on a QUIC connection of its own.
// tlsConf must trust the server; h3 is added to its ALPN list when it names
// none. qconf may be nil; its EnableDatagrams is forced on. h is sent with
// the CONNECT. On an HTTP answer other than 2xx the response is returned
// with the error.
func Dial(ctx context.Context, urlStr string, tlsConf *tls.Config, qconf *quic.Config, h http.Header) (*http.Response, *Session, error) {
	u, err := url.Parse(urlStr)
	if err != nil {
		return nil, nil, err
	}
	tlsConf = tlsConf.Clone()
	if tlsConf == nil {
		tlsConf = &tls.Config{}
	}
	if len(tlsConf.NextProtos) == 0 {
		tlsConf.NextProtos = []string{http3.NextProtoH3}
	}
	if qconf == nil {
		qconf = &quic.Config{}
	} else {
		qconf = qconf.Clone()
	}
	qconf.EnableDatagrams = true
	if qconf.Tracer == nil {
		qconf.Tracer = qlogdir.Tracer()
	}
	conn, err := quic.DialAddr(ctx, u.Host, tlsConf, qconf)
	if err != nil {
		return nil, nil, err
	}
	rsp, s, err := dialOn(ctx, conn, u, h)
	if err != nil {
		_ = conn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
		return rsp, nil, err
	}
	return rsp, s, nil
}

func dialOn(ctx context.Context, conn *quic.Conn, u *url.URL, h http.Header) (*http.Response, *Session, error) {
	tr := &http3.Transport{EnableDatagrams: true, AdditionalSettings: map[uint64]uint64{settingEnableWebTransport: 1}}
	cc := tr.NewRawClientConn(conn)
	s := &Session{conn: conn, cc: cc, bidi: make(chan *Stream, 16), uni: make(chan *ReceiveStream, 16), ready: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	go s.acceptBidi()
	go s.acceptUni()

	select {
	case <-cc.ReceivedSettings():
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("draft02: waiting for HTTP/3 SETTINGS: %w", context.Cause(ctx))
	case <-conn.Context().Done():
		return nil, nil, context.Cause(conn.Context())
	}
	st := cc.Settings()
	if v := st.Other[settingEnableWebTransport]; v == 0 {
		return nil, nil, errors.New("draft02: the server did not announce SETTINGS_ENABLE_WEBTRANSPORT")
	}
	// quic-go v0.41's server does not announce SETTINGS_ENABLE_CONNECT_PROTOCOL
	// (RFC 9220), though it takes extended CONNECT: it is not required.
	hdr := http.Header{}
	for k, v := range h {
		hdr[k] = append([]string(nil), v...)
	}
	hdr.Set(draftHeader, "1")
	req := (&http.Request{Method: http.MethodConnect, Proto: protocol, Host: u.Host, URL: u, Header: hdr}).WithContext(ctx)
	rs, err := cc.OpenRequestStream(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := rs.SendRequestHeader(req); err != nil {
		rs.CancelRead(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
		rs.CancelWrite(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
		return nil, nil, err
	}
	rsp, err := rs.ReadResponse()
	if err != nil {
		rs.CancelRead(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
		rs.CancelWrite(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
		return nil, nil, err
	}
	if rsp.StatusCode < 200 || rsp.StatusCode >= 300 {
		_ = rs.Close()
		return rsp, nil, fmt.Errorf("draft02: received status %d", rsp.StatusCode)
	}
	s.req = rs
	s.id = uint64(rs.StreamID())
	close(s.ready)
	go s.readCapsules()
	context.AfterFunc(conn.Context(), func() {
		s.end(&webtransport.SessionError{Remote: true, Message: fmt.Sprintf("QUIC connection closed: %v", context.Cause(conn.Context()))})
	})
	return rsp, s, nil
}

// Session is a draft-02 WebTransport session. Its methods may be called
// from any goroutine; CloseWithError ends it and its QUIC connection.
type Session struct {
	conn   *quic.Conn
	cc     *http3.RawClientConn
	req    *http3.RequestStream
	id     uint64
	ready  chan struct{} // closed once req and id are set
	bidi   chan *Stream
	uni    chan *ReceiveStream
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu  sync.Mutex
	err error // why the session ended; set once
}

// end records why the session ended (the first reason wins) and cancels
// its context.
func (s *Session) end(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.cancel(err)
}

// Err is why the session ended, or nil while it lasts.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Context is done when the session ends.
func (s *Session) Context() context.Context { return s.ctx }

// ConnectionState is the QUIC connection's state (TLS included).
func (s *Session) ConnectionState() quic.ConnectionState { return s.conn.ConnectionState() }

// readCapsules reads the CONNECT stream until the peer closes the session
// with a capsule or ends the stream.
func (s *Session) readCapsules() {
	p := http3.NewCapsuleParser(s.req)
	for {
		typ, cr, err := p.Next()
		if err != nil {
			s.end(&webtransport.SessionError{Remote: true, Message: "the CONNECT stream ended"})
			return
		}
		if typ != closeCapsule {
			if err := cr.Discard(); err != nil {
				s.end(&webtransport.SessionError{Remote: true, Message: "the CONNECT stream ended"})
				return
			}
			continue
		}
		b, err := io.ReadAll(io.LimitReader(cr, 4+1024))
		if err != nil || len(b) < 4 {
			s.end(&webtransport.SessionError{Remote: true, Message: "malformed CLOSE_WEBTRANSPORT_SESSION capsule"})
			return
		}
		s.end(&webtransport.SessionError{Remote: true, ErrorCode: webtransport.SessionErrorCode(binary.BigEndian.Uint32(b)), Message: string(b[4:])})
		_ = s.req.Close()
		return
	}
}

// CloseWithError ends the session with a CLOSE_WEBTRANSPORT_SESSION capsule,
// waits up to CloseLinger for the peer to end the CONNECT stream, and closes
// the QUIC connection.
func (s *Session) CloseWithError(code webtransport.SessionErrorCode, msg string) error {
	first := s.Err() == nil
	s.end(&webtransport.SessionError{ErrorCode: code, Message: msg})
	var err error
	if first {
		b := binary.BigEndian.AppendUint32(nil, uint32(code))
		b = append(b, msg...)
		err = http3.WriteCapsule(quicvarint.NewWriter(s.req), closeCapsule, b)
		_ = s.req.Close()
		linger := time.NewTimer(CloseLinger)
		select {
		case <-s.req.Context().Done():
		case <-s.conn.Context().Done():
		case <-linger.C:
		}
		linger.Stop()
	}
	_ = s.conn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
	return err
}

// OpenStreamSync opens a bidirectional stream of the session.
func (s *Session) OpenStreamSync(ctx context.Context) (*Stream, error) {
	q, err := openStream(ctx, s, bidiSignal, s.conn.OpenStreamSync)
	if err != nil {
		return nil, err
	}
	return &Stream{q: q, s: s}, nil
}

// OpenUniStreamSync opens a unidirectional stream of the session.
func (s *Session) OpenUniStreamSync(ctx context.Context) (*SendStream, error) {
	q, err := openStream(ctx, s, uniStreamType, s.conn.OpenUniStreamSync)
	if err != nil {
		return nil, err
	}
	return &SendStream{q: q, s: s}, nil
}

// AcceptStream takes the next bidirectional stream the peer opened.
func (s *Session) AcceptStream(ctx context.Context) (*Stream, error) {
	select {
	case st := <-s.bidi:
		return st, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.ctx.Done():
		return nil, s.Err()
	}
}

// AcceptUniStream takes the next unidirectional stream the peer opened.
func (s *Session) AcceptUniStream(ctx context.Context) (*ReceiveStream, error) {
	select {
	case st := <-s.uni:
		return st, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.ctx.Done():
		return nil, s.Err()
	}
}

// SendDatagram sends an HTTP/3 datagram of the session.
func (s *Session) SendDatagram(b []byte) error { return s.req.SendDatagram(b) }

// ReceiveDatagram waits for the next HTTP/3 datagram of the session.
func (s *Session) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	b, err := s.req.ReceiveDatagram(ctx)
	if err != nil && s.Err() != nil {
		return nil, s.Err()
	}
	return b, err
}

// Needed reports whether err is webtransport-go v0.13 refusing a server for
// lacking what only later drafts have (QUIC stream reset partial delivery,
// SETTINGS_WT_ENABLED): the refusal a draft-02 server earns.
func Needed(err error) bool {
	var rn *webtransport.RequirementsNotMetError
	if !errors.As(err, &rn) {
		return false
	}
	return strings.Contains(rn.Message, "stream reset partial delivery") || strings.Contains(rn.Message, "didn't enable WebTransport")
}
