package flow

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	neturl "net/url"
	"time"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
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
		cfg.Info = Implementation{Name: "mcp-flow", Version: protocol.Version}
	}
	codecs, err := newCodecSet(lim.Codec)
	if err != nil {
		return nil, err
	}
	var conn connCatcher
	d := cfg.Transport
	if d == nil {
		tlsConf := &tls.Config{}
		if cfg.TLSConfig != nil {
			tlsConf = cfg.TLSConfig.Clone()
		}
		tlsConf.MinVersion = tls.VersionTLS13
		t := &webtransport.Transport{
			TLSClientConfig: tlsConf,
			QUICConfig:      lim.quicConfig(),
		}
		t.QUICConfig.MaxIncomingUniStreams = lim.incomingUniStreams()
		lim.setReceiveWindows(t.QUICConfig)
		conn.handshaked = cfg.Handshaked
		t.DialAddr = conn.dial
		d = t
	}
	retries := cfg.RefusedRetries
	if retries == 0 {
		retries = DefaultRefusedRetries
	}
	var (
		hctx context.Context
		wts  WTSession
	)
	for attempt := 0; ; attempt++ {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, lim.HandshakeTimeout)
		defer cancel()
		header, err := dialHeader(hctx, &cfg)
		if err != nil {
			return nil, err
		}
		var resp *http.Response
		if cfg.DialSession != nil {
			resp, wts, err = cfg.DialSession(hctx, url, header)
		} else {
			var ws *webtransport.Session
			if resp, ws, err = d.Dial(hctx, url, header); err == nil {
				wts = WrapWebTransport(ws)
			}
		}
		if err == nil {
			break
		}
		if attempt < retries && refused(err) {
			wait := refusedBackoff(attempt)
			cfg.Logger.Debug("server refused the QUIC connection; dialling again", "url", redactURL(url), "attempt", attempt+1, "wait", wait)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("flow: dial %s: %w (and %w while waiting to dial again)", redactURL(url), err, ctx.Err())
			}
		}
		if resp != nil {
			return nil, refusedError(url, resp, err)
		}
		return nil, fmt.Errorf("flow: dial %s: %w", redactURL(url), err)
	}
	s := newSession(wts, false, lim, cfg.Hooks, cfg.Handler, cfg.Logger, codecs)
	if conn.k != nil {
		s.conn.Store(conn.k)
	}
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
		code := CloseProtocolError
		if _, refused := err.(*jsonrpc.Error); refused {
			code = CloseRefused // the server answered initialize with an error (spec §8.2)
		}
		s.closeWith(&SessionError{Code: code, Reason: "initialize failed: " + err.Error(), Err: err})
		if je, ok := err.(*jsonrpc.Error); ok {
			return nil, je
		}
		return nil, fmt.Errorf("flow: initialize: %w", err)
	}
	s.markOpen()
	go s.readLoop()
	s.watchWaiting()
	if cfg.Mover != nil {
		cfg.Mover.add(s)
	}
	return s, nil
}

// redactURL is u as logs and errors name it: without user information,
// query and fragment, where a token may travel (logs never carry one).
func redactURL(u string) string {
	p, err := neturl.Parse(u)
	if err != nil {
		return "(an unreadable URL)"
	}
	if p.User == nil && p.RawQuery == "" && p.Fragment == "" {
		return u
	}
	p.User, p.RawQuery, p.Fragment, p.ForceQuery = nil, "", "", false
	return p.String() + " (query and user information left out)"
}

// DefaultRefusedRetries is ClientConfig.RefusedRetries's default.
const DefaultRefusedRetries = 5

// refusedBackoff is the wait before redial attempt+1 after a refusal:
// 50 ms doubled per attempt, capped at 1 s, less a random part of up to a
// half so that a refused burst does not come back at once. Five redials wait
// 1.55 s at most in all.
func refusedBackoff(attempt int) time.Duration {
	d := min(50*time.Millisecond<<min(attempt, 5), time.Second)
	return d - rand.N(d/2)
}

// refused reports whether err is the server's QUIC stack refusing the
// connection (CONNECTION_REFUSED, RFC 9000 §20.1): quic-go refuses a
// connection whose handshake ends while its accept queue is full. The
// server's application never saw it, so dialling again is safe.
func refused(err error) bool {
	var te *quic.TransportError
	return errors.As(err, &te) && te.Remote && te.ErrorCode == quic.ConnectionRefused
}

// Ping sends ping and waits for its answer.
func (s *Session) Ping(ctx context.Context) error {
	_, err := s.Call(ctx, protocol.MethodPing, nil)
	return err
}
