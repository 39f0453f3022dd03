package conformance

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/draft02"
	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
	"github.com/mcp-flow/mcp-flow/wtconn"
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

// conn is a WebTransport session as the probe uses it, in either dialect:
// the seam of package wtconn, whose errors are webtransport-go's in both,
// and the TLS version its handshake negotiated.
type conn struct {
	wtconn.Session
	tlsVersion uint16
}

// close ends the session and its QUIC connection.
func (c conn) close() { _ = c.CloseWithError(0, "") }

// dialConn opens a session in t's dialect; DialectAuto falls back to
// draft-02 on a refusal that only a draft-02 server earns.
func dialConn(ctx context.Context, t Target, h http.Header) (conn, *http.Response, error) {
	if t.Dialect == DialectDraft02 {
		return dialDraft02(ctx, t, h)
	}
	c, resp, err := dialCurrent(ctx, t, h)
	if err != nil && t.Dialect == DialectAuto && draft02.Needed(err) {
		return dialDraft02(ctx, t, h)
	}
	return c, resp, err
}

func dialCurrent(ctx context.Context, t Target, h http.Header) (conn, *http.Response, error) {
	tr := &webtransport.Transport{
		TLSClientConfig: t.TLS.Clone(),
		QUICConfig:      &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true, MaxIdleTimeout: 10 * time.Second, Tracer: qlogdir.Tracer()},
	}
	// Closing the session closes its QUIC connection; Close only stops
	// what is still being established.
	defer tr.Close()
	resp, s, err := tr.Dial(ctx, t.URL, h)
	if err != nil {
		return conn{}, resp, err
	}
	return conn{wtconn.Wrap(s), s.SessionState().ConnectionState.TLS.Version}, resp, nil
}

func dialDraft02(ctx context.Context, t Target, h http.Header) (conn, *http.Response, error) {
	resp, s, err := draft02.Dial(ctx, t.URL, t.TLS, &quic.Config{MaxIdleTimeout: 10 * time.Second}, h)
	if err != nil {
		return conn{}, resp, err
	}
	return conn{s.Flow(), s.ConnectionState().TLS.Version}, resp, nil
}
