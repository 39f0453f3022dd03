package draft02

import (
	"context"
	"crypto/tls"
	"net/http"

	"github.com/mcp-flow/mcp-flow/wtconn"
	"github.com/quic-go/quic-go"
)

// FlowDialer returns a flow.ClientConfig.DialSession that opens draft-02
// sessions with tlsConf (TLS 1.3 at least) and qconf (may be nil).
func FlowDialer(tlsConf *tls.Config, qconf *quic.Config) func(ctx context.Context, url string, h http.Header) (*http.Response, wtconn.Session, error) {
	tlsConf = tlsConf.Clone()
	if tlsConf == nil {
		tlsConf = &tls.Config{}
	}
	tlsConf.MinVersion = tls.VersionTLS13
	return func(ctx context.Context, url string, h http.Header) (*http.Response, wtconn.Session, error) {
		resp, s, err := Dial(ctx, url, tlsConf, qconf, h)
		if err != nil {
			return resp, nil, err
		}
		return resp, s.Flow(), nil
	}
}

// Flow is s as the WebTransport seam (package wtconn) that flow and the
// conformance runner speak through.
func (s *Session) Flow() wtconn.Session { return flowSession{s} }

// flowSession is a Session as wtconn.Session; its stream methods return a
// nil interface, never a nil pointer in one.
type flowSession struct{ *Session }

func (s flowSession) OpenStreamSync(ctx context.Context) (wtconn.Stream, error) {
	st, err := s.Session.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (s flowSession) AcceptStream(ctx context.Context) (wtconn.Stream, error) {
	st, err := s.Session.AcceptStream(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (s flowSession) OpenUniStreamSync(ctx context.Context) (wtconn.SendStream, error) {
	st, err := s.Session.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (s flowSession) AcceptUniStream(ctx context.Context) (wtconn.ReceiveStream, error) {
	st, err := s.Session.AcceptUniStream(ctx)
	if err != nil {
		return nil, err
	}
	return st, nil
}
