package conformance

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/draft02"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// Dialect is the WebTransport version the runner speaks to a server.
type Dialect string

// The dialects. Auto tries Current and, when the server is refused for
// lacking what only later drafts have (QUIC stream reset partial delivery,
// SETTINGS_WT_ENABLED), Draft02: the published v0.1 examples serve draft-02
// (webtransport-go v0.6).
const (
	DialectAuto    Dialect = ""
	DialectCurrent Dialect = "current" // webtransport-go v0.13
	DialectDraft02 Dialect = "draft02" // internal/draft02
)

// ParseDialect reads a dialect's name ("auto" for DialectAuto).
func ParseDialect(s string) (Dialect, error) {
	switch d := Dialect(s); d {
	case "auto":
		return DialectAuto, nil
	case DialectCurrent, DialectDraft02:
		return d, nil
	}
	return "", fmt.Errorf("unknown WebTransport dialect %q (auto, current or draft02)", s)
}

// conn is a WebTransport session as the probe uses it, in either dialect.
// Its errors are webtransport-go's (*webtransport.SessionError,
// *webtransport.StreamError) in both.
type conn interface {
	openStream(ctx context.Context) (ctrlStream, error)
	openUniStream(ctx context.Context) (io.WriteCloser, error)
	acceptUniStream(ctx context.Context) (inStream, error)
	SendDatagram(b []byte) error
	ReceiveDatagram(ctx context.Context) ([]byte, error)
	tlsVersion() uint16
	// close ends the session and everything it holds.
	close()
}

type ctrlStream interface {
	io.ReadWriteCloser
	SetReadDeadline(time.Time) error
}

type inStream interface {
	io.Reader
	SetReadDeadline(time.Time) error
}

// dialConn opens a session in t's dialect; DialectAuto falls back to
// draft-02 on a refusal that only a draft-02 server earns.
func dialConn(ctx context.Context, t Target, h http.Header) (conn, *http.Response, error) {
	if t.Dialect == DialectDraft02 {
		return dialDraft02(ctx, t, h)
	}
	c, resp, err := dialCurrent(ctx, t, h)
	if err != nil && t.Dialect == DialectAuto && needsDraft02(err) {
		return dialDraft02(ctx, t, h)
	}
	return c, resp, err
}

// needsDraft02 reports whether webtransport-go v0.13 refused the server
// for something a draft-02 server lacks.
func needsDraft02(err error) bool { return draft02.Needed(err) }

type currentConn struct {
	tr *webtransport.Transport
	s  *webtransport.Session
}

func dialCurrent(ctx context.Context, t Target, h http.Header) (conn, *http.Response, error) {
	tr := &webtransport.Transport{
		TLSClientConfig: t.TLS.Clone(),
		QUICConfig:      &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true, MaxIdleTimeout: 10 * time.Second},
	}
	resp, s, err := tr.Dial(ctx, t.URL, h)
	if err != nil {
		tr.Close()
		return nil, resp, err
	}
	return &currentConn{tr: tr, s: s}, resp, nil
}

// The stream methods return a nil interface, never a nil pointer in one.

func (c *currentConn) openStream(ctx context.Context) (ctrlStream, error) {
	st, err := c.s.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (c *currentConn) openUniStream(ctx context.Context) (io.WriteCloser, error) {
	st, err := c.s.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (c *currentConn) acceptUniStream(ctx context.Context) (inStream, error) {
	st, err := c.s.AcceptUniStream(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (c *currentConn) SendDatagram(b []byte) error { return c.s.SendDatagram(b) }
func (c *currentConn) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	return c.s.ReceiveDatagram(ctx)
}
func (c *currentConn) tlsVersion() uint16 { return c.s.SessionState().ConnectionState.TLS.Version }
func (c *currentConn) close() {
	_ = c.s.CloseWithError(0, "")
	_ = c.tr.Close()
}

type draft02Conn struct{ s *draft02.Session }

func dialDraft02(ctx context.Context, t Target, h http.Header) (conn, *http.Response, error) {
	resp, s, err := draft02.Dial(ctx, t.URL, t.TLS, &quic.Config{MaxIdleTimeout: 10 * time.Second}, h)
	if err != nil {
		return nil, resp, err
	}
	return draft02Conn{s}, resp, nil
}

func (c draft02Conn) openStream(ctx context.Context) (ctrlStream, error) {
	st, err := c.s.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (c draft02Conn) openUniStream(ctx context.Context) (io.WriteCloser, error) {
	st, err := c.s.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (c draft02Conn) acceptUniStream(ctx context.Context) (inStream, error) {
	st, err := c.s.AcceptUniStream(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (c draft02Conn) SendDatagram(b []byte) error { return c.s.SendDatagram(b) }
func (c draft02Conn) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	return c.s.ReceiveDatagram(ctx)
}
func (c draft02Conn) tlsVersion() uint16 { return c.s.ConnectionState().TLS.Version }
func (c draft02Conn) close()             { _ = c.s.CloseWithError(0, "") }
