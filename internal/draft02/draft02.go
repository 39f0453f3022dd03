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
	if err := s.Err(); err != nil {
		return nil, err
	}
	q, err := s.conn.OpenStreamSync(ctx)
	if err != nil {
		return nil, s.mapErr(err)
	}
	if _, err := q.Write(quicvarint.Append(quicvarint.Append(nil, bidiSignal), s.id)); err != nil {
		return nil, s.mapErr(err)
	}
	return &Stream{q: q, s: s}, nil
}

// OpenUniStreamSync opens a unidirectional stream of the session.
func (s *Session) OpenUniStreamSync(ctx context.Context) (*SendStream, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	q, err := s.conn.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, s.mapErr(err)
	}
	if _, err := q.Write(quicvarint.Append(quicvarint.Append(nil, uniStreamType), s.id)); err != nil {
		return nil, s.mapErr(err)
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

// acceptBidi takes the peer's bidirectional streams; HTTP/3 refuses those
// that are not WebTransport's.
func (s *Session) acceptBidi() {
	for {
		q, err := s.conn.AcceptStream(context.Background())
		if err != nil {
			return
		}
		go sortStream(s, q, bidiSignal, s.cc.HandleBidirectionalStream,
			func(q *quic.Stream) { q.CancelRead(sessionGoneCode); q.CancelWrite(sessionGoneCode) },
			func(q *quic.Stream) *Stream { return &Stream{q: q, s: s} }, s.bidi)
	}
}

// acceptUni takes the peer's unidirectional streams; HTTP/3's own (the
// control and QPACK streams) go to the HTTP/3 connection.
func (s *Session) acceptUni() {
	for {
		q, err := s.conn.AcceptUniStream(context.Background())
		if err != nil {
			return
		}
		go sortStream(s, q, uniStreamType, s.cc.HandleUnidirectionalStream,
			func(q *quic.ReceiveStream) { q.CancelRead(sessionGoneCode) },
			func(q *quic.ReceiveStream) *ReceiveStream { return &ReceiveStream{q: q, s: s} }, s.uni)
	}
}

// sortStream reads the type (or signal) that starts a stream of the peer:
// a stream of another kind goes to other; a WebTransport stream of this
// session is queued, one of another session is refused.
func sortStream[Q interface {
	io.Reader
	quicvarint.Peeker
}, W any](s *Session, q Q, kind uint64, other, refuse func(Q), wrap func(Q) W, queue chan<- W) {
	typ, err := quicvarint.Peek(q)
	if err != nil {
		return
	}
	if typ != kind {
		other(q)
		return
	}
	r := quicvarint.NewReader(q)
	_, _ = quicvarint.Read(r)
	id, err := quicvarint.Read(r)
	if !s.ours(id, err) {
		refuse(q)
		return
	}
	select {
	case queue <- wrap(q):
	case <-s.ctx.Done():
		refuse(q)
	}
}

// ours reports whether a stream header names this session, waiting for
// the CONNECT's answer if the stream overtook it.
func (s *Session) ours(id uint64, err error) bool {
	if err != nil {
		return false
	}
	select {
	case <-s.ready:
	case <-s.ctx.Done():
		return false
	case <-s.conn.Context().Done():
		return false
	}
	return id == s.id
}

// mapErr turns a QUIC stream reset in the WebTransport range into a
// *webtransport.StreamError, and any error after the session's end into
// the session's error.
func (s *Session) mapErr(err error) error {
	var qe *quic.StreamError
	if errors.As(err, &qe) {
		if qe.ErrorCode == sessionGoneCode {
			if se := s.Err(); se != nil {
				return se
			}
			return &webtransport.SessionError{Remote: qe.Remote, Message: "the session ended"}
		}
		if c, ok := fromHTTPCode(qe.ErrorCode); ok {
			return &webtransport.StreamError{ErrorCode: c, Remote: qe.Remote}
		}
	}
	if se := s.Err(); se != nil && !errors.Is(err, io.EOF) {
		var st *webtransport.StreamError
		if !errors.As(err, &st) {
			return se
		}
	}
	return err
}

func toHTTPCode(n webtransport.StreamErrorCode) quic.StreamErrorCode {
	return quic.StreamErrorCode(firstErrorCode) + quic.StreamErrorCode(n) + quic.StreamErrorCode(n/0x1e)
}

func fromHTTPCode(h quic.StreamErrorCode) (webtransport.StreamErrorCode, bool) {
	if h < firstErrorCode || h > lastErrorCode || (h-0x21)%0x1f == 0 {
		return 0, false
	}
	shifted := h - firstErrorCode
	return webtransport.StreamErrorCode(shifted - shifted/0x1f), true
}

// Stream is a bidirectional stream of a draft-02 session.
type Stream struct {
	q *quic.Stream
	s *Session
}

func (st *Stream) Read(b []byte) (int, error) {
	n, err := st.q.Read(b)
	return n, st.s.mapErr(err)
}

func (st *Stream) Write(b []byte) (int, error) {
	n, err := st.q.Write(b)
	return n, st.s.mapErr(err)
}

// Close finishes the sending side (FIN).
func (st *Stream) Close() error { return st.q.Close() }

// CancelRead asks the peer to stop sending, with code.
func (st *Stream) CancelRead(code webtransport.StreamErrorCode) { st.q.CancelRead(toHTTPCode(code)) }

// CancelWrite resets the sending side with code.
func (st *Stream) CancelWrite(code webtransport.StreamErrorCode) { st.q.CancelWrite(toHTTPCode(code)) }

// SetReadDeadline bounds the reads.
func (st *Stream) SetReadDeadline(t time.Time) error { return st.q.SetReadDeadline(t) }

// SetWriteDeadline bounds the writes.
func (st *Stream) SetWriteDeadline(t time.Time) error { return st.q.SetWriteDeadline(t) }

// ReceiveStream is a unidirectional stream the peer opened.
type ReceiveStream struct {
	q *quic.ReceiveStream
	s *Session
}

func (st *ReceiveStream) Read(b []byte) (int, error) {
	n, err := st.q.Read(b)
	return n, st.s.mapErr(err)
}

// CancelRead asks the peer to stop sending, with code.
func (st *ReceiveStream) CancelRead(code webtransport.StreamErrorCode) {
	st.q.CancelRead(toHTTPCode(code))
}

// SetReadDeadline bounds the reads.
func (st *ReceiveStream) SetReadDeadline(t time.Time) error { return st.q.SetReadDeadline(t) }

// SendStream is a unidirectional stream this side opened.
type SendStream struct {
	q *quic.SendStream
	s *Session
}

func (st *SendStream) Write(b []byte) (int, error) {
	n, err := st.q.Write(b)
	return n, st.s.mapErr(err)
}

// Close finishes the stream (FIN).
func (st *SendStream) Close() error { return st.q.Close() }

// CancelWrite resets the stream with code.
func (st *SendStream) CancelWrite(code webtransport.StreamErrorCode) {
	st.q.CancelWrite(toHTTPCode(code))
}

// SetWriteDeadline bounds the writes.
func (st *SendStream) SetWriteDeadline(t time.Time) error { return st.q.SetWriteDeadline(t) }

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
