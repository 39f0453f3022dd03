package main

// One origin, both transports (spec §10.1, beyond the guide): beside its
// UDP socket (WebTransport over HTTP/3) the server listens on TCP at the
// same host and port and serves Streamable HTTP there, over HTTP/1.1 and
// HTTP/2, with the same certificate, at the same path.
//
// The Streamable HTTP side is the bridge's HTTP front (bridge.NewHTTPFront),
// whose MCP-Flow client dials this very server over loopback UDP: one
// QUIC hop on the loopback interface per message (and one MCP-Flow session
// per HTTP session or 2026 client), a loopback round trip and a little CPU
// per call (not measured yet). It is accepted for now because it is the only way that
// reuses every translation of the front (eras, progress, ref/stream,
// downloads, limits) without a second copy of the protocol code: flow has
// no in-memory session (its sessions are webtransport-go sessions on
// quic-go connections; bench and the bridge tests build their fronts
// against in-process servers the same way, over loopback). The same tools,
// or the same -upstream, answer both transports, since both reach the one
// flow.Server.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
)

// portZeroTries bounds how often listen picks a new port when -addr asks
// for any port (":0") and the TCP port of the one the UDP socket got is
// taken.
const portZeroTries = 8

// listen binds the server's UDP socket and, unless noTCP, a TCP listener at
// the same host and port. With a fixed port a taken TCP port is an error;
// with port 0 another port is tried.
func listen(cfg flow.ServerConfig, noTCP bool) (*flow.Server, net.Listener, error) {
	_, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("-addr %q: %w", cfg.Addr, err)
	}
	tries := 1
	if port == "0" && !noTCP && cfg.PacketConn == nil {
		tries = portZeroTries
	}
	for i := 0; ; i++ {
		srv, err := flow.NewServer(cfg)
		if err != nil {
			return nil, nil, err
		}
		if err := srv.Listen(); err != nil {
			return nil, nil, err
		}
		if noTCP {
			return srv, nil, nil
		}
		ln, err := net.Listen("tcp", srv.Addr().String())
		if err == nil {
			return srv, ln, nil
		}
		srv.Close()
		if i+1 == tries {
			return nil, nil, &tcpTakenError{addr: srv.Addr().String(), err: err}
		}
	}
}

// tcpTakenError is listen's error when the TCP port beside the UDP one
// cannot be bound.
type tcpTakenError struct {
	addr string
	err  error
}

func (e *tcpTakenError) Error() string {
	return fmt.Sprintf("cannot listen on TCP %s for Streamable HTTP (the same host and port as WebTransport's UDP): %v; free the port, choose another -addr, or pass -no-tcp to serve WebTransport only", e.addr, e.err)
}

func (e *tcpTakenError) Unwrap() error { return e.err }

// httpSide is the TCP listener's HTTPS server and the HTTP front behind it.
type httpSide struct {
	front  *bridge.HTTPFront
	srv    *http.Server
	served chan error // Serve's error, once
}

// serveHTTP serves Streamable HTTP on ln at path, as a client of flowSrv
// over loopback (see the file's comment). public is -public-url (the
// front's public URL and further host names). origins and maxSessions are the
// UDP side's -allow-origin and -max-sessions: one Origin policy (spec §9),
// and no more HTTP sessions than the server would take anyway. observe
// (-metrics; nil without) gets the front's HTTP requests and the Events of
// its own MCP-Flow sessions (role client).
//
// With auth (-auth-*; nil without) the front asks every request for a token
// as the UDP side asks every CONNECT (the same bearer.Config: 401/403 with
// the same challenge), serves the resource metadata at auth.Paths, and
// passes each client's token through to its MCP-Flow sessions
// (bridge.HTTPConfig.PassToken): the front and the server are one resource,
// one audience, so the token is presented to the resource it was issued
// for, and tools see the client's own identity (docs/spec.md §10,
// "Authentication on the fronts").
func serveHTTP(ln net.Listener, flowSrv *flow.Server, cert *certs.Cert, path string, public publicURLs, origins []string, maxSessions int, observe func(flow.Event), auth *serverAuth, log *slog.Logger) (*httpSide, error) {
	target, err := loopbackURL(flowSrv.Addr(), path)
	if err != nil {
		return nil, err
	}
	pinned, err := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{cert.Hash()}})
	if err != nil {
		return nil, err
	}
	hc := bridge.HTTPConfig{
		// ExitOnDisconnect: the front's MCP-Flow server is this process; when
		// it shuts down there is nothing to reconnect to, so a 2025 session
		// ends (404: its client starts over elsewhere) and a 2026 request
		// that finds no session gets -32006 at once (spec §8, §10.1).
		Stdio: bridge.StdioConfig{URL: target, Client: flow.ClientConfig{TLSConfig: pinned, Logger: log, Hooks: flow.Hooks{Observe: observe}}, Logger: log,
			ExitOnDisconnect: true},
		AllowedOrigins: origins, MaxSessions: maxSessions, Observe: observe,
		// The names of the certificate and of -public-url are the
		// server's own; the listener's address (and, on loopback, the
		// loopback names) are allowed anyway (spec §9,
		// internal/hostcheck).
		HostNames: append(slices.Clone(cert.Leaf.DNSNames), public.hosts()...), PublicURL: public.endpoint(path),
	}
	if auth != nil {
		hc.Auth, hc.Resource, hc.AuthorizationServers, hc.PassToken = auth.Bearer, auth.Resource, auth.Issuers, true
	}
	front := bridge.NewHTTPFront(hc)
	mux := http.NewServeMux()
	mux.Handle(path, front)
	if auth != nil {
		for _, p := range auth.Paths {
			mux.Handle(p, auth.WellKnown)
		}
	}
	_, port, _ := net.SplitHostPort(flowSrv.Addr().String())
	// No ReadTimeout or WriteTimeout: SSE streams last as long as their
	// requests; the front bounds bodies and held bytes itself (as
	// mcp-flow bridge http).
	srv := &http.Server{Handler: altSvc(port, mux), TLSConfig: certs.ServerTLSConfig(cert),
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	h := &httpSide{front: front, srv: srv, served: make(chan error, 1)}
	go func() { h.served <- srv.ServeTLS(ln, "", "") }()
	return h, nil
}

// altSvc adds Alt-Svc: h3=":port" to every response: the same origin
// speaks HTTP/3 on UDP (RFC 7838), where MCP-Flow is.
func altSvc(port string, next http.Handler) http.Handler {
	v := `h3=":` + port + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Alt-Svc", v)
		next.ServeHTTP(w, r)
	})
}

// loopbackURL is the URL the HTTP front dials: the server's own address,
// with an unspecified IP (0.0.0.0, ::) replaced by 127.0.0.1 (Go binds
// "udp" on :: dual-stack, so 127.0.0.1 reaches it too).
func loopbackURL(a net.Addr, path string) (string, error) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return "", fmt.Errorf("the server's address %q: %w", a, err)
	}
	ip := ap.Addr().Unmap().WithZone("")
	if ip.IsUnspecified() {
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	return "https://" + net.JoinHostPort(ip.String(), strconv.Itoa(int(ap.Port()))) + path, nil
}

// shutdown drains the HTTP side within ctx: the listener closes, the
// front answers the requests in flight and ends its sessions (which ends
// their MCP-Flow sessions and their GET streams), and Serve returns.
// What is left when ctx ends is closed.
func (h *httpSide) shutdown(ctx context.Context) error {
	srvDone := make(chan error, 1)
	go func() { srvDone <- h.srv.Shutdown(ctx) }()
	err := h.front.Shutdown(ctx)
	if serr := <-srvDone; serr != nil {
		h.srv.Close()
		err = errors.Join(err, serr)
	}
	if serr := <-h.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// close ends the HTTP side at once (a second signal).
func (h *httpSide) close() {
	h.front.Close()
	h.srv.Close()
}
