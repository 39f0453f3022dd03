package flow

// This file is long because it is a Server's whole life: listening, the
// CONNECT's checks (Origin, token, the session slot), each session's watchdogs
// (handshake, idle), and the shutdown.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// Server accepts MCP-Flow sessions over WebTransport (spec §2).
//
// Start it with Listen and Serve (or ListenAndServe); end it with Shutdown
// (graceful: $/shutdown to every session, drain, close) or Close. All
// methods are safe for concurrent use.
type Server struct {
	cfg    ServerConfig
	lim    Limits
	log    *slog.Logger
	codecs codecSet
	h3     *http3.Server
	wt     *webtransport.Server

	mu       sync.Mutex
	pc       net.PacketConn
	ln       *quic.EarlyListener
	acc      *accepting      // ln's (accept.go)
	tr       *quic.Transport // ln's, on pc
	sessions map[*Session]struct{}
	// listeners are the subscriptions/listen requests being served (listen.go).
	listeners map[*listener]struct{}
	// resourceSubs are the URIs each 2025 session subscribed to with
	// resources/subscribe (subscribe.go).
	resourceSubs map[*Session]map[string]struct{}
	closing      bool
	conns        sync.WaitGroup // one per accepted QUIC connection
	// fresh are the accepted connections that have made no request yet,
	// and freshGone is closed when one leaves it (fresh.go).
	fresh     map[*quic.Conn]struct{}
	freshGone chan struct{}
	// freshWait and onAwaitFresh are set by the tests only
	// (export_test.go): the wait instead of FreshWait, and a hook called
	// when Shutdown begins waiting for fresh connections.
	freshWait    time.Duration
	onAwaitFresh func(n int)
	// refuse, if set before Serve (only by the tests, export_test.go),
	// makes the QUIC stack refuse a new connection from the address with
	// CONNECTION_REFUSED when it returns true, as a full accept queue does.
	// It runs for each Initial packet of a connection not yet made.
	refuse func(net.Addr) bool
	// acceptPlan is defaultAcceptPlan, or a test's (export_test.go).
	acceptPlan acceptPlan
}

// NewServer checks cfg and returns a server that is not yet listening.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Handler == nil {
		return nil, errors.New("flow: ServerConfig.Handler is required")
	}
	if cfg.TLSConfig == nil || (len(cfg.TLSConfig.Certificates) == 0 && cfg.TLSConfig.GetCertificate == nil) {
		return nil, errors.New("flow: ServerConfig.TLSConfig needs a certificate (see package certs)")
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:4433"
	}
	if cfg.Path == "" {
		cfg.Path = DefaultPath
	}
	if len(cfg.Encodings) == 0 {
		cfg.Encodings = slices.Clone(codec.Names)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Info.Name == "" {
		cfg.Info = Implementation{Name: "mcp-flow", Version: protocol.Version}
	}
	if cfg.FleetKey != nil {
		k := *cfg.FleetKey // the caller's may change
		cfg.FleetKey = &k
	}
	lim := cfg.Limits.withDefaults()
	codecs, err := newCodecSet(lim.Codec)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, lim: lim, log: cfg.Logger, codecs: codecs, sessions: map[*Session]struct{}{}, acceptPlan: defaultAcceptPlan}
	tlsConf := cfg.TLSConfig.Clone()
	tlsConf.MinVersion = tls.VersionTLS13 // spec §9: TLS 1.3 only
	mux := http.NewServeMux()
	mux.HandleFunc(cfg.Path, s.serveHTTP)
	var handler http.Handler = mux
	if plain := cfg.HTTPHandler; plain != nil {
		// Every CONNECT stays with serveHTTP (its Origin check, its
		// limits); anything else is Streamable HTTP over HTTP/3 (spec §10.1).
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodConnect {
				mux.ServeHTTP(w, r)
				return
			}
			plain.ServeHTTP(w, r)
		})
	}
	s.h3 = &http3.Server{
		TLSConfig:  http3.ConfigureTLSConfig(tlsConf),
		QUICConfig: lim.quicConfig(),
		Handler:    s.requestSeen(handler),
	}
	s.h3.QUICConfig.MaxIncomingStreams, s.h3.QUICConfig.MaxIncomingUniStreams = 100, 100
	webtransport.ConfigureHTTP3Server(s.h3)
	wtConnContext := s.h3.ConnContext
	s.h3.ConnContext = func(ctx context.Context, c *quic.Conn) context.Context {
		return context.WithValue(wtConnContext(ctx, c), quicConnKey{}, c)
	}
	s.wt = &webtransport.Server{
		H3: s.h3,
		// Origin is checked by serveHTTP first, so that a refusal is a 403.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	return s, nil
}

// Listen binds the UDP socket (or takes ServerConfig.PacketConn). After it
// returns, Addr and URL are known.
func (s *Server) Listen() error {
	pc := s.cfg.PacketConn
	if pc == nil {
		var err error
		if pc, err = net.ListenPacket("udp", s.cfg.Addr); err != nil {
			return fmt.Errorf("flow: listen on %s: %w", s.cfg.Addr, err)
		}
	}
	s.mu.Lock()
	s.pc = pc
	s.mu.Unlock()
	return nil
}

// Serve serves sessions on the socket bound by Listen until Close or
// Shutdown. It returns http.ErrServerClosed after either, once every
// connection it accepted has ended.
func (s *Server) Serve() error {
	s.mu.Lock()
	pc, closing := s.pc, s.closing
	s.mu.Unlock()
	if pc == nil {
		return errors.New("flow: Serve before Listen")
	}
	if closing {
		return http.ErrServerClosed
	}
	// The listener is the one webtransport.Server.Serve would make, with its
	// accept loop replaced by accepting's (accept.go).
	acc := &accepting{s: s, plan: s.acceptPlan}
	plain := s.h3.QUICConfig
	qconf := plain.Clone()
	qconf.GetConfigForClient = func(ci *quic.ClientInfo) (*quic.Config, error) {
		if s.refuse != nil && s.refuse(ci.RemoteAddr) {
			return nil, errors.New("refused by a test")
		}
		acc.initial()
		return plain, nil
	}
	tr := s.transport(pc)
	ln, err := tr.ListenEarly(s.h3.TLSConfig, qconf)
	if err != nil {
		tr.Close()
		return fmt.Errorf("flow: QUIC listener: %w", err)
	}
	s.warnSmallBuffers(pc)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		tr.Close()
		return http.ErrServerClosed
	}
	s.ln, s.tr, s.acc = ln, tr, acc
	s.mu.Unlock()
	err = acc.run(ln) // until ln closes
	ln.Close()
	s.conns.Wait()
	if s.isClosing() {
		return http.ErrServerClosed
	}
	return err
}

// transport is the QUIC transport of the server's socket, with the keys
// of ServerConfig.FleetKey and the connection IDs of
// ServerConfig.ConnectionIDs when they are set.
func (s *Server) transport(pc net.PacketConn) *quic.Transport {
	tr := &quic.Transport{Conn: pc, ConnectionIDGenerator: s.cfg.ConnectionIDs}
	if k := s.cfg.FleetKey; k != nil {
		tr.StatelessResetKey, tr.TokenGeneratorKey = k.statelessResetKey(), k.tokenGeneratorKey()
	}
	return tr
}

// ListenAndServe is Listen then Serve.
func (s *Server) ListenAndServe() error {
	if err := s.Listen(); err != nil {
		return err
	}
	return s.Serve()
}

// Addr returns the bound address (nil before Listen).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pc == nil {
		return nil
	}
	return s.pc.LocalAddr()
}

// URL returns the https URL of the endpoint.
func (s *Server) URL() string {
	a := s.Addr()
	if a == nil {
		return ""
	}
	return "https://" + a.String() + s.cfg.Path
}

// Sessions returns the number of sessions open.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// originAllowed applies the origin policy (spec §9): a request without
// Origin comes from a non-browser client and is allowed; a page on this
// machine (an Origin whose host is localhost or a loopback IP) is allowed
// when the server listens on a loopback address; any other Origin must be in
// AllowedOrigins.
func (s *Server) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if s.cfg.faults.NoOriginCheck || o == "" || slices.Contains(s.cfg.AllowedOrigins, "*") || slices.Contains(s.cfg.AllowedOrigins, o) {
		return true
	}
	return LoopbackOrigin(o) && s.loopbackListener()
}

// loopbackListener reports whether the server's socket is bound to a
// loopback address (spec §9).
func (s *Server) loopbackListener() bool {
	s.mu.Lock()
	pc := s.pc
	s.mu.Unlock()
	if pc == nil {
		return false
	}
	a, ok := pc.LocalAddr().(*net.UDPAddr)
	return ok && a.IP.IsLoopback()
}

// LoopbackOrigin reports whether an Origin (scheme://host[:port]) names this
// machine: its host is localhost or a loopback IP (spec §9). DNS rebinding
// cannot forge it: a browser sets Origin from the page's own URL.
func LoopbackOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	h := u.Hostname()
	ip := net.ParseIP(h)
	return h == "localhost" || (ip != nil && ip.IsLoopback())
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect { // ServerConfig.HTTPHandler nil
		http.Error(w, "MCP-Flow: this endpoint takes WebTransport CONNECT requests", http.StatusMethodNotAllowed)
		return
	}
	s.ServeSession(w, r, func() (WTSession, error) {
		wts, err := s.wt.Upgrade(w, r)
		if err != nil {
			return nil, err
		}
		return WrapWebTransport(wts), nil
	})
}

// ServeSession serves the MCP-Flow session of r, a WebTransport CONNECT
// request, as the server's own listener does: it checks r's Origin and
// authorization and the server's MaxSessions, writing a refusal to w, and
// only then calls upgrade for the WebTransport session, which it serves on
// a goroutine of its own until the session ends (Shutdown and Close end it
// with the others). The listener's upgrade is webtransport-go's; tests pass
// one side of an in-memory pair (package wtconn/memwt), so that a server
// session runs with no socket, under testing/synctest.
func (s *Server) ServeSession(w http.ResponseWriter, r *http.Request, upgrade func() (WTSession, error)) {
	if !s.originAllowed(r) {
		s.observe(Event{Kind: EventRefused, Outcome: "origin", Reason: fmt.Sprintf("a CONNECT from origin %q, which is not allowed (from %s)", r.Header.Get("Origin"), r.RemoteAddr)})
		http.Error(w, "origin not allowed: "+strconv.Quote(r.Header.Get("Origin"))+" is not a page of this machine, and not among the allowed origins: -allow-origin (ServerConfig.AllowedOrigins)", http.StatusForbidden)
		return
	}
	token, ok := s.authorize(w, r) // spec §9.1: before any slot
	if !ok {
		return
	}
	s.mu.Lock()
	if s.closing || len(s.sessions) >= s.lim.MaxSessions {
		closing := s.closing
		s.mu.Unlock()
		if closing {
			s.observe(Event{Kind: EventRefused, Outcome: "shutting-down", Reason: "a CONNECT while the server shuts down (from " + r.RemoteAddr + ")"})
		} else {
			s.observe(Event{Kind: EventRefused, Outcome: "sessions", Reason: fmt.Sprintf("MaxSessions (%d) reached (a CONNECT from %s)", s.lim.MaxSessions, r.RemoteAddr)})
		}
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many sessions", http.StatusServiceUnavailable)
		return
	}
	// Reserve the slot before upgrading so that concurrent CONNECTs cannot
	// overshoot the limit.
	sess := &Session{}
	s.sessions[sess] = struct{}{}
	s.mu.Unlock()

	wts, err := upgrade()
	if err != nil {
		s.mu.Lock()
		delete(s.sessions, sess)
		s.mu.Unlock()
		s.observe(Event{Kind: EventRefused, Outcome: "upgrade", Reason: "WebTransport upgrade failed: " + err.Error()})
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	real := newSession(wts, true, s.lim, s.cfg.Hooks, s.cfg.Handler, slog.New(newLazyAttr(s.log.Handler(), slog.String("remote", r.RemoteAddr))), s.codecs)
	real.srv = serverSide{cfg: &s.cfg, server: s}
	if conn, ok := r.Context().Value(quicConnKey{}).(*quic.Conn); ok {
		if hs, ok := w.(http3.HTTPStreamer); ok {
			real.end = &connectEnd{str: hs.HTTPStream(), conn: conn}
		}
	}
	if token != nil {
		real.token = token
		real.watchExpiry(token.Expiration)
	}
	s.mu.Lock()
	delete(s.sessions, sess)
	s.sessions[real] = struct{}{}
	closing := s.closing
	s.mu.Unlock()
	if closing {
		real.startShutdown("server shutting down")
	}
	// The session runs on a goroutine of its own and this handler returns,
	// so that http3 lets go of the request, the response's headers and the
	// request's copy of the TLS connection state, which an idle session
	// would otherwise keep for its lifetime (webtransport-go has taken the
	// CONNECT stream over: http3 leaves it open).
	go func() {
		real.serve()
		s.mu.Lock()
		delete(s.sessions, real)
		delete(s.resourceSubs, real)
		s.mu.Unlock()
	}()
}

// serve runs a server session: the control stream, then the reading loops,
// until the session ends.
func (s *Session) serve() {
	// Derived from the WebTransport session's context, which closeWith
	// ends too, rather than s.ctx: s.ctx then has no child while the
	// session is idle (a context keeps the map of its children once made).
	hctx, cancel := context.WithTimeout(s.wt.Context(), s.lim.HandshakeTimeout)
	ctrl, err := s.wt.AcceptStream(hctx)
	cancel()
	if err != nil {
		s.closeWith(&SessionError{Code: CloseHandshakeTimeout, Reason: "no control stream within the handshake timeout", Err: err})
		return
	}
	// Under wmu: a shutdown may already be writing (sendWith checks ctrl).
	s.wmu.Lock()
	s.ctrl = ctrl
	s.wmu.Unlock()
	s.fr = wire.NewFrameReader(ctrl, s.lim.MaxFrameSize)
	s.setState(StateControlOpened)
	go s.refuseExtraStreams()
	go s.acceptStreams()
	go s.receiveDatagrams()
	s.watchHandshake()
	s.watchIdle()
	// A shutdown that came before the control stream announces itself now.
	s.maybeFinish()
	s.readLoop()
	<-s.done
}

// refuseExtraStreams resets any bidirectional stream after the control
// stream: MCP-Flow 0.1 defines no other (spec §3).
func (s *Session) refuseExtraStreams() {
	for {
		st, err := s.wt.AcceptStream(s.ctx)
		if err != nil {
			return
		}
		st.CancelRead(StreamCode(-32600))
		st.CancelWrite(StreamCode(-32600))
	}
}

// watchHandshake closes a session that has not completed initialize within
// HandshakeTimeout of its CONNECT. It arms a timer rather than run a
// goroutine: an idle session keeps no goroutine (nor its stack) for it.
// closeWith stops it.
func (s *Session) watchHandshake() {
	s.keepTimer(time.AfterFunc(s.lim.HandshakeTimeout, func() {
		select {
		case <-s.done:
			return
		default:
		}
		if s.State() < StateReady {
			s.fail(CloseHandshakeTimeout, nil, "initialize not completed within the handshake timeout")
		}
	}))
}

// keepTimer adds t to the timers closeWith stops, or stops it if closeWith
// has passed that point already (it cancels s.ctx first).
func (s *Session) keepTimer(t *time.Timer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		t.Stop()
		return
	}
	s.timers = append(s.timers, t)
}

// watchIdle shuts down a session idle for IdleTimeout (spec §8), checking
// every quarter of it (every).
func (s *Session) watchIdle() {
	s.every(max(s.lim.IdleTimeout/4, 10*time.Millisecond), func() bool {
		s.mu.Lock()
		busy := s.inflightLocked() > 0 || s.dr.refusing()
		s.mu.Unlock()
		if !busy && time.Since(time.Unix(0, s.touched.Load())) >= s.lim.IdleTimeout {
			s.log.Debug("session idle; shutting it down", "idle", s.lim.IdleTimeout)
			s.startShutdown("idle timeout")
			return false
		}
		return true
	})
}

// every calls check every period until the session ends or check returns
// false, from a timer that re-arms itself, not a goroutine: an idle session
// keeps no goroutine (nor its stack) for it.
func (s *Session) every(period time.Duration, check func() bool) {
	var t atomic.Pointer[time.Timer]
	tick := func() {
		select {
		case <-s.done:
			return
		default:
		}
		if check() {
			t.Load().Reset(period) // after a Stop at the session's end: one more tick, which returns
		}
	}
	tm := time.AfterFunc(time.Duration(math.MaxInt64), tick) // armed once t holds it
	t.Store(tm)
	tm.Reset(period)
	s.keepTimer(tm)
}

// stopAccepting marks the server closing, so that new CONNECTs get 503, and
// returns the sessions open (not those still upgrading).
func (s *Server) stopAccepting() []*Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	sessions := make([]*Session, 0, len(s.sessions))
	for sess := range s.sessions {
		if sess.wt != nil {
			sessions = append(sessions, sess)
		}
	}
	return sessions
}

// Shutdown stops taking sessions, sends $/shutdown on every session, waits
// until they have drained (or ctx ends, when what is left is cut off) and
// closes the server. Before it closes, a connection that has made no
// request yet gets up to FreshWait to make its CONNECT, answered 503
// (fresh.go: a browser whose connection is closed before its CONNECT is
// answered may crash).
func (s *Server) Shutdown(ctx context.Context) error {
	sessions := s.stopAccepting()
	var wg sync.WaitGroup
	errs := make([]error, len(sessions))
	for i, sess := range sessions {
		wg.Go(func() { errs[i] = sess.Shutdown(ctx, "server shutting down") })
	}
	wg.Wait()
	if n := s.awaitFresh(ctx); n > 0 {
		s.log.Debug("closing connections that made no request", "connections", n, "waited", FreshWait)
	}
	err := errors.Join(errs...)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close closes every session at once and the server.
func (s *Server) Close() error {
	sessions := s.stopAccepting()
	for _, sess := range sessions {
		_ = sess.Close()
	}
	err := s.wt.Close()
	s.mu.Lock()
	if s.ln != nil {
		_ = s.ln.Close()
	}
	if s.tr != nil {
		_ = s.tr.Close() // the connections that are left
	}
	if s.pc != nil {
		_ = s.pc.Close()
	}
	s.mu.Unlock()
	return err
}
