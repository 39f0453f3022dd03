package fallback

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
)

// Probe picks a transport for url without opening a session: the choice of
// Dial's race, made on handshakes alone. cfg.Transport, when set, is taken
// as it is (reason "forced"). Else a QUIC handshake (ALPN h3) to the URL's
// host and port races cfg.Budget (DefaultBudget when zero): one that
// completes within it means MCPFlow. Past the budget, or at once when the
// QUIC dial fails outright, a TLS handshake over TCP to the same host and
// port (ALPN h2, http/1.1) is dialled too, and the first handshake to
// complete wins; a TCP dial that fails ends the probe with an error at
// once. Both use cfg.Flow.TLSConfig, so a certificate the client would
// refuse fails the probe. The reason says why, in words for a log
// line: "QUIC answered in 3ms", "no QUIC handshake within 400ms; TCP
// answered in 2ms". Every connection the probe opens is closed before it
// returns (the QUIC one with CloseWithError(0, "probe")); when neither
// handshake completes the error names what each said.
//
// It is for a client that dials later, when it no longer can wait for a
// race: the stdio front (cmd/mcp-flow bridge stdio) probes once at start,
// because its session is dialled only when the host's initialize comes,
// and its reconnections then stay on the transport chosen.
func Probe(ctx context.Context, url string, cfg Config) (t Transport, reason string, err error) {
	switch cfg.Transport {
	case MCPFlow, StreamableHTTP:
		return cfg.Transport, "forced", nil
	case Auto:
	default:
		return "", "", fmt.Errorf("fallback: unknown transport %q (want %q or %q)", cfg.Transport, MCPFlow, StreamableHTTP)
	}
	addr, err := hostPort(url)
	if err != nil {
		return "", "", err
	}
	budget := cfg.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	quicDone := make(chan error, 1)
	tcpDone := make(chan error, 1)
	quicPending, tcpPending := true, false
	defer func() {
		// Nothing is left open: the dial still running is cancelled and
		// waited for (it closes what it got).
		cancel()
		if quicPending {
			<-quicDone
		}
		if tcpPending {
			<-tcpDone
		}
	}()
	go func() {
		tc := probeTLS(cfg, "h3")
		tc.MinVersion = tls.VersionTLS13
		c, err := quic.DialAddr(ctx, addr, tc, &quic.Config{Tracer: qlogdir.Tracer()})
		if err == nil {
			_ = c.CloseWithError(0, "probe")
		}
		quicDone <- err
	}()
	var (
		tcpStarted      bool
		tcpStart        time.Time
		why             string
		quicErr, tcpErr error
		timer           = time.NewTimer(budget)
		startTCP        = func(reason string) {
			if tcpStarted {
				return
			}
			tcpStarted, tcpPending, tcpStart, why = true, true, time.Now(), reason
			go func() {
				d := &tls.Dialer{Config: probeTLS(cfg, "h2", "http/1.1")}
				c, err := d.DialContext(ctx, "tcp", addr)
				if err == nil {
					_ = c.Close()
				}
				tcpDone <- err
			}()
		}
	)
	defer timer.Stop()
	for {
		select {
		case err := <-quicDone:
			quicPending = false
			if err == nil {
				if tcpStarted {
					return MCPFlow, why + "; QUIC answered first, in " + since(start), nil
				}
				return MCPFlow, "QUIC answered in " + since(start), nil
			}
			quicErr = err
			if tcpStarted && !tcpPending {
				return "", "", probeErr(quicErr, tcpErr)
			}
			startTCP("QUIC failed (" + err.Error() + ")")
		case <-timer.C:
			startTCP(fmt.Sprintf("no QUIC handshake within %v", budget))
		case err := <-tcpDone:
			tcpPending = false
			if err == nil {
				return StreamableHTTP, why + "; TCP answered in " + since(tcpStart), nil
			}
			// TCP refused after QUIC had its budget: nothing listens, or
			// nothing gets through; waiting on for QUIC would only delay
			// the error.
			tcpErr = err
			if quicPending {
				quicErr = errors.New(why)
			}
			return "", "", probeErr(quicErr, tcpErr)
		case <-ctx.Done():
			return "", "", fmt.Errorf("fallback: probe %s: %w (QUIC: %v; TLS over TCP: %v)", addr, ctx.Err(), orPending(quicErr), orPending(tcpErr))
		}
	}
}

func probeErr(quicErr, tcpErr error) error {
	return fmt.Errorf("fallback: probe: no handshake: QUIC: %w; TLS over TCP: %w", quicErr, tcpErr)
}

func orPending(err error) any {
	if err == nil {
		return "no answer"
	}
	return err
}

// probeTLS is a copy of cfg.Flow.TLSConfig offering the ALPN protos.
func probeTLS(cfg Config, protos ...string) *tls.Config {
	tc := &tls.Config{}
	if cfg.Flow.TLSConfig != nil {
		tc = cfg.Flow.TLSConfig.Clone()
	}
	tc.NextProtos = protos
	return tc
}

// hostPort is the host and port an https URL names (443 unless it says).
func hostPort(url string) (string, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return "", fmt.Errorf("fallback: %w", err)
	}
	if u.Scheme != "https" || u.Hostname() == "" {
		return "", fmt.Errorf("fallback: %q is not an https URL", url)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}
