package core

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"strings"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/draft02"
)

// Why a front cannot reach its MCP-Flow server (spec §10, "Reaching the
// server"): a dial's error read down to one cause and what fixes it.

// UnreachableError is why a front could not open its MCP-Flow session
// (spec §10, "Reaching the server"), in one line: the cause (Why) and what
// to do about it (Fix), never a stack of wrapped errors. The stdio front
// logs or returns it, the HTTP front's clients get it as their JSON-RPC
// error's message.
type UnreachableError struct {
	URL string // redacted: no query, no user information
	// Why is the cause: "connection refused", "no QUIC answer within
	// 10s", "TLS certificate not trusted", "HTTP 404 Not Found", "HTTP 401
	// Unauthorized: WWW-Authenticate: …", the other WebTransport dialect;
	// else the dialer's own words.
	Why string
	Fix string // what to do, naming the flag; "" when there is nothing to say
	// Final: dialling again will not help (nothing answered within a
	// whole handshake attempt, connection refused, a certificate not
	// trusted, HTTP 404, the other dialect); the stdio front gives up on
	// it at start (StdioConfig.ExitIfUnreachable). A refused token (401,
	// 403) is not final: a token file may be rewritten.
	Final bool
	Err   error // the dial's error
}

var _ error = (*UnreachableError)(nil)

func (e *UnreachableError) Error() string {
	msg := "cannot reach the MCP-Flow server " + e.URL + ": " + e.Why
	if e.Fix != "" {
		msg += " (" + e.Fix + ")"
	}
	return msg
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Diagnose reads err, a failed dial of the MCP-Flow server at url (flow.Dial,
// or fallback.Probe's), as an *UnreachableError; took is how long the
// dial waited (0: unknown), for "no QUIC answer within …". An err that is
// one already is returned as it is.
func Diagnose(url string, err error, took time.Duration) *UnreachableError {
	return diagnose(url, err, took, false)
}

// diagnose is Diagnose knowing whether a QUIC handshake with the server
// completed during the dial (shook): a dial that then timed out had an
// answer, and is no "no QUIC answer".
func diagnose(url string, err error, took time.Duration, shook bool) *UnreachableError {
	var u *UnreachableError
	if errors.As(err, &u) {
		return u
	}
	u = &UnreachableError{URL: redacted(url), Err: err}
	var (
		re   *flow.RefusedError
		cve  *tls.CertificateVerificationError
		uae  x509.UnknownAuthorityError
		hne  x509.HostnameError
		cie  x509.CertificateInvalidError
		idle *quic.IdleTimeoutError
		hst  *quic.HandshakeTimeoutError
	)
	switch {
	case errors.As(err, &re):
		u.Why = fmt.Sprintf("HTTP %d %s", re.Status, http.StatusText(re.Status))
		if re.Challenge != "" {
			u.Why += ": WWW-Authenticate: " + re.Challenge
		}
		switch {
		case re.Status == http.StatusUnauthorized && !strings.Contains(re.Challenge, "error="):
			u.Fix = "the server wants an access token"
		case re.Status == http.StatusUnauthorized:
			u.Fix = "the access token was refused: expired, revoked or for another audience"
		case re.Status == http.StatusForbidden && strings.Contains(re.Challenge, "insufficient_scope"):
			u.Fix = "the access token lacks the scope its challenge names"
		case re.Status == http.StatusForbidden:
			u.Fix = "the server refused this client (its Origin or its token)"
		}
		switch re.Status {
		case http.StatusNotFound:
			u.Fix, u.Final = "no MCP-Flow endpoint at this path: check the URL's path; mcp-flow-server serves "+flow.DefaultPath, true
		case http.StatusServiceUnavailable, http.StatusTooManyRequests:
			u.Fix = "the server is busy; dialling again"
		}
	case errors.As(err, &cve), errors.As(err, &uae), errors.As(err, &hne), errors.As(err, &cie),
		errors.Is(err, certs.ErrHashMismatch), strings.Contains(err.Error(), "x509: "):
		u.Why, u.Final = "TLS certificate not trusted", true
		u.Fix = "pass the server's -cert-hash, which mcp-flow-server prints, or -ca with the CA that signed its certificate"
	case draft02.Needed(err):
		u.Why, u.Final = "the server speaks WebTransport draft-02, as the v0.1 examples do", true
		u.Fix = "dial it with -webtransport auto or draft02"
	case strings.Contains(err.Error(), "did not announce SETTINGS_ENABLE_WEBTRANSPORT"):
		u.Why, u.Final = "the server does not speak WebTransport draft-02", true
		u.Fix = "dial it with -webtransport auto or current"
	case errors.Is(err, syscall.ECONNREFUSED):
		u.Why, u.Final = "connection refused", true
		u.Fix = "nothing listens at " + hostPort(url) + ": is the server running, and is the URL's port right?"
	case !shook && (errors.As(err, &idle) || errors.As(err, &hst) || errors.Is(err, context.DeadlineExceeded) && took > 0 &&
		strings.HasPrefix(err.Error(), "flow: dial ") && !strings.Contains(err.Error(), "SETTINGS")):
		u.Why, u.Final = "no QUIC answer within "+took.Round(time.Second).String(), true
		u.Fix = "is the server running at " + hostPort(url) + ", and does UDP reach it?"
	case errors.Is(err, context.DeadlineExceeded) && took > 0:
		u.Why = "no answer to initialize within " + took.Round(100*time.Millisecond).String()
		u.Fix = "a server with a stdio -upstream may still be starting it: try a longer -handshake-timeout"
	default:
		u.Why = strings.TrimPrefix(err.Error(), "flow: dial "+u.URL+": ")
	}
	return u
}

// redacted is u without user information, query and fragment, where a
// token may travel.
func redacted(u string) string {
	p, err := neturl.Parse(u)
	if err != nil {
		return "(an unreadable URL)"
	}
	p.User, p.RawQuery, p.Fragment, p.ForceQuery = nil, "", "", false
	return p.String()
}

// hostPort is the host and port url names, for a message.
func hostPort(url string) string {
	p, err := neturl.Parse(url)
	if err != nil || p.Host == "" {
		return "that address"
	}
	if p.Port() == "" {
		return p.Host + ":443"
	}
	return p.Host
}
