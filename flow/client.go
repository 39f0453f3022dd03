package flow

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// Dial opens a WebTransport session to url, opens the control stream and
// runs initialize (spec §2, §4). The returned session is READY.
func Dial(ctx context.Context, url string, cfg ClientConfig) (*Session, error) {
	lim := cfg.Limits.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Handler == nil {
		cfg.Handler = Mux{}
	}
	if cfg.Info.Name == "" {
		cfg.Info = Implementation{Name: "mcp-flow", Version: Version}
	}
	codecs, err := newCodecSet(lim.Codec)
	if err != nil {
		return nil, err
	}
	d := cfg.Transport
	if d == nil {
		tlsConf := &tls.Config{}
		if cfg.TLSConfig != nil {
			tlsConf = cfg.TLSConfig.Clone()
		}
		tlsConf.MinVersion = tls.VersionTLS13
		t := &webtransport.Transport{
			TLSClientConfig: tlsConf,
			QUICConfig: &quic.Config{
				EnableDatagrams:                  true,
				EnableStreamResetPartialDelivery: true,
				MaxIdleTimeout:                   30 * time.Second,
				KeepAlivePeriod:                  10 * time.Second,
				MaxIncomingUniStreams:            int64(max(100, lim.MaxConcurrentStreams*2)),
			},
		}
		if w := uint64(lim.StreamReceiveWindow); w > 0 {
			q := t.QUICConfig
			q.InitialStreamReceiveWindow, q.MaxStreamReceiveWindow = w, w
			q.InitialConnectionReceiveWindow, q.MaxConnectionReceiveWindow = 4*w, 4*w
		}
		d = t
	}
	hctx, cancel := context.WithTimeout(ctx, lim.HandshakeTimeout)
	defer cancel()
	var resp *http.Response
	var wts WTSession
	if cfg.DialSession != nil {
		resp, wts, err = cfg.DialSession(hctx, url, cfg.Header)
	} else {
		var ws *webtransport.Session
		if resp, ws, err = d.Dial(hctx, url, cfg.Header); err == nil {
			wts = WrapWebTransport(ws)
		}
	}
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("flow: dial %s: HTTP %d: %w", url, resp.StatusCode, err)
		}
		return nil, fmt.Errorf("flow: dial %s: %w", url, err)
	}
	s := newSession(wts, false, lim, cfg.Hooks, cfg.Handler, cfg.Logger, codecs)
	ctrl, err := wts.OpenStreamSync(hctx)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("flow: opening the control stream: %w", err)
	}
	s.ctrl = ctrl
	s.fr = wire.NewFrameReader(ctrl, lim.MaxFrameSize)
	s.setState(StateControlOpened)
	go s.acceptStreams()
	go s.receiveDatagrams()
	if err := s.initialize(hctx, &cfg); err != nil {
		s.closeWith(&SessionError{Code: CloseProtocolError, Reason: "initialize failed", Err: err})
		if je, ok := err.(*jsonrpc.Error); ok {
			return nil, je
		}
		return nil, fmt.Errorf("flow: initialize: %w", err)
	}
	go s.readLoop()
	return s, nil
}

// Ping sends ping and waits for its answer.
func (s *Session) Ping(ctx context.Context) error {
	_, err := s.Call(ctx, MethodPing, nil)
	return err
}

var _ = http.StatusOK
