package flow

// This file is long because it holds the package's configuration types
// (Limits, Hooks, ServerConfig, ClientConfig), whose field comments are their
// documentation and defaults.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/internal/faults"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/wire"
)

// Limits bound what one peer may cost the other. The zero value of each field
// means its default, documented on the field and in docs/spec.md §8.
type Limits struct {
	// MaxFrameSize bounds a control frame this side accepts; announced to the
	// peer as maxFrameSize. Default wire.DefaultMaxFrameSize (16 MiB).
	MaxFrameSize uint32
	// MaxConcurrentStreams bounds the execution streams open at once per
	// session; announced as maxConcurrentStreams. Past it a handler's
	// OpenStream fails with -32000. Default 64.
	MaxConcurrentStreams int
	// MaxRequestsInFlight bounds the peer's requests being handled at once per
	// session; past it a request is answered with -32005. A request counts
	// until its answer is sent, not while its execution streams flow (those
	// MaxConcurrentStreams bounds). Default 256.
	MaxRequestsInFlight int
	// MaxSessions bounds the sessions a server holds at once; past it a CONNECT
	// gets HTTP 503. Default 1024.
	MaxSessions int
	// HandshakeTimeout bounds the time from CONNECT to the end of initialize.
	// QUIC's handshake idle timeout is the larger of it and quic-go's 5 s
	// (which 200 handshakes at once on a loaded machine outlasted). Default
	// 10 s.
	HandshakeTimeout time.Duration
	// IdleTimeout closes (with $/shutdown) a session that has exchanged no
	// control frame and has nothing in flight for this long. Default 5 min.
	// It is about a quiet peer; PeerIdleTimeout is about a dead one.
	IdleTimeout time.Duration
	// PeerIdleTimeout is QUIC's idle timeout (quic.Config.MaxIdleTimeout,
	// RFC 9000 §10.1): a connection that has received nothing for this long
	// is over, and the session ends with a *SessionError (spec §8). It is
	// how long a killed peer or a cut path takes to notice. The peers use
	// the smaller of their two values, but quic-go takes the peer's as 5 s
	// at least: a side that wants to know sooner sets its own. A dead peer
	// is noticed within PeerIdleTimeout + KeepAlivePeriod of its last
	// packet. Default 8 s (10 s with the keep-alive).
	PeerIdleTimeout time.Duration
	// KeepAlivePeriod is how long a quiet connection waits before it sends
	// a QUIC PING, so that a live but quiet peer does not hit
	// PeerIdleTimeout (quic-go sends one at half the idle timeout at the
	// latest). Default 2 s: a PING lost on a lossy path then has 6 s of
	// the default PeerIdleTimeout to be retransmitted (QUIC's loss
	// recovery) and answered, so a lost packet or two does not end a live
	// session. Negative: no keep-alive (a quiet session then ends after
	// PeerIdleTimeout).
	KeepAlivePeriod time.Duration
	// DrainTimeout bounds a $/shutdown drain; what is still in flight then is
	// cut off. Default 30 s.
	DrainTimeout time.Duration
	// ShutdownGrace is how long the side that sent $/shutdown, once nothing
	// of its own is in flight, keeps its direction of the control stream
	// open after the last frame it read (or its $/shutdown), so that it
	// can still answer -32006 to requests that crossed its $/shutdown
	// (spec §7.2 rule 3). Default DefaultShutdownGrace (50 ms).
	ShutdownGrace time.Duration
	// PeerFINWait is how long a side that has finished its direction of
	// the control stream waits for the peer's FIN (the side that received
	// $/shutdown) or for the peer's close (the side that sent it) before
	// it closes the session itself with code 0 (spec §7.2 rule 4); and how
	// long a server's clean close waits for the client to close the QUIC
	// connection (flow/wtclose.go). Default DefaultPeerFINWait (250 ms).
	PeerFINWait time.Duration
	// StreamWriteStallTimeout bounds how long a write on an execution
	// stream or on the control stream may make no progress (the peer reads
	// nothing and QUIC flow control holds the bytes back). An execution
	// stream is then reset with 32603 and reported with $/streamError
	// (spec §5.4); a stalled control stream ends the session (code 8, spec
	// §8.2). Default 30 s.
	StreamWriteStallTimeout time.Duration
	// StreamWait bounds how long a client waits for the execution stream that
	// a ref/stream names before failing it with -32001. Default 10 s.
	StreamWait time.Duration
	// StreamReceiveWindow, when set, caps the QUIC flow-control window of
	// each stream this side receives (and sets the connection's to that
	// times the streams the peer may open plus one, so that unread streams
	// never hold the control stream back: spec §5.4, setReceiveWindows):
	// the bytes of an execution stream that can be in flight towards
	// this side at once. A small window keeps the control stream's latency
	// low while a large result streams in (its packets queue behind at most
	// this much data), at the cost of throughput on long paths (at most one
	// window per round trip per stream: 256 KiB over 20 ms is ~13 MB/s).
	// Default 0: quic-go's autotuned window (512 KiB at first, up to 6 MiB
	// per stream). Client side only for now.
	StreamReceiveWindow int
	// StreamQueueDelay is the queueing delay that the sender of an
	// execution stream aims at on the path (spec §5, §8): it paces the
	// stream from its connection's RTT samples, so that a large result
	// keeps the bottleneck's queue, and the control frames behind it, to
	// about this much delay instead of quic-go's congestion window filling
	// it (pace.go; docs/design.md "Pacing execution streams"). Paths whose
	// minimum RTT is under 1 ms (loopback, a LAN) are not paced. Default
	// 0: a third of the path's minimum RTT, at least 2 ms; negative: no
	// pacing. Server side (the sender of execution streams); it needs
	// nothing of the client, and a client's StreamReceiveWindow still caps
	// what is in flight.
	StreamQueueDelay time.Duration
	// MaxProgressRate bounds the progress datagrams a session sends per
	// second (spec §6.2, §8; the guide's "throttle datagrams"): updates
	// that come faster wait in their request's slot, where a newer one
	// replaces them. Whatever the rate, the sender also waits while the
	// connection's datagram queue is full, so congestion and loss slow it
	// down. Default 1000; negative: no cap but the connection's.
	MaxProgressRate int
	// Codec bounds decoding (depth, sizes, batches, number digits, decoded
	// size; spec §8); default codec.DefaultLimits().
	Codec *codec.Limits
}

// The liveness defaults (spec §8): a killed peer is noticed within
// DefaultPeerIdleTimeout + DefaultKeepAlivePeriod (10 s) of its last packet.
// quic-go starts the idle timer at the later of the last packet received and
// the first ack-eliciting packet sent after it, which on a quiet connection
// is the next keep-alive PING.
const (
	DefaultPeerIdleTimeout = 8 * time.Second
	DefaultKeepAlivePeriod = 2 * time.Second
)

// DefaultStreamWriteStallTimeout is Limits.StreamWriteStallTimeout's
// default (spec §5.4, §8).
const DefaultStreamWriteStallTimeout = 30 * time.Second

// quicConfig is the QUIC configuration both roles start from: datagrams
// (spec §6), RESET_STREAM_AT for execution streams (§5.4), and the handshake,
// idle and keep-alive times of l, and a qlog file per connection under
// $QLOGDIR when it is set (qlog.go). Each role adds its own stream limits.
func (l Limits) quicConfig() *quic.Config {
	return &quic.Config{
		EnableDatagrams:                  true,
		EnableStreamResetPartialDelivery: true,
		HandshakeIdleTimeout:             l.quicHandshakeIdle(),
		MaxIdleTimeout:                   l.PeerIdleTimeout,
		KeepAlivePeriod:                  l.keepAlive(),
		Tracer:                           qlogTracer(),
	}
}

// The bounds of one QUIC handshake attempt (quic.Config.HandshakeIdleTimeout,
// spec §10): never shorter than quic-go's default 5 s (which 200 handshakes
// at once on a loaded machine outlasted), never longer than 10 s, whatever
// HandshakeTimeout is.
const (
	minQUICHandshakeIdle = 5 * time.Second
	maxQUICHandshakeIdle = 10 * time.Second
)

// quicHandshakeIdle is the quic.Config.HandshakeIdleTimeout for l:
// HandshakeTimeout, kept within [minQUICHandshakeIdle, maxQUICHandshakeIdle].
// A short HandshakeTimeout is enforced by the session, which says why; a long
// one (the CLI's 65 s, for an upstream that takes a minute to answer
// initialize) bounds the wait for initialize, not one QUIC handshake, so
// that a reconnection whose Initial goes unanswered tries again after 10 s
// (spec §10).
func (l Limits) quicHandshakeIdle() time.Duration {
	return min(max(l.HandshakeTimeout, minQUICHandshakeIdle), maxQUICHandshakeIdle)
}

// keepAlive is the quic.Config.KeepAlivePeriod for l (after withDefaults).
func (l Limits) keepAlive() time.Duration { return max(l.KeepAlivePeriod, 0) }

// incomingUniStreams is the quic.Config.MaxIncomingUniStreams of a client
// for l: the execution streams (and HTTP/3's own) the server may have open
// towards it at once, read or not.
func (l Limits) incomingUniStreams() int64 { return int64(max(100, l.MaxConcurrentStreams*2)) }

// quic-go's default receive windows (quic.Config).
const (
	quicStreamWindow  = 512 << 10 // initial, per stream
	quicMaxStreamWin  = 6 << 20   // autotuned up to, per stream
	quicMaxConnWindow = 15 << 20  // autotuned up to, per connection
)

// setReceiveWindows sets q's flow-control windows for a client with l
// (spec §8). QUIC bounds what a peer may send both per stream and per
// connection, and bytes that arrive on a stream the application does not
// read count against the connection's window until they are read. With
// quic-go's defaults (512 KiB per stream, 768 KiB per connection at first)
// two unread execution streams filled the connection's window, and then
// not a byte of the control stream could come: no answer, not even to a
// ping, until the streams were reset. So the connection's window holds the
// initial window of every stream the server may open towards this side
// (incomingUniStreams) plus the control stream's: streams that are not read
// stop at their own windows, and the control stream keeps flowing. A stream
// that is read autotunes as quic-go does (up to StreamReceiveWindow, or
// 6 MiB); the connection's window grows with it as reads allow.
func (l Limits) setReceiveWindows(q *quic.Config) {
	stream, maxStream := uint64(quicStreamWindow), uint64(quicMaxStreamWin)
	if w := uint64(l.StreamReceiveWindow); w > 0 {
		stream, maxStream = w, w
	}
	conn := uint64(l.incomingUniStreams()+1) * stream
	q.InitialStreamReceiveWindow, q.MaxStreamReceiveWindow = stream, maxStream
	q.InitialConnectionReceiveWindow = conn
	q.MaxConnectionReceiveWindow = max(conn, quicMaxConnWindow)
	if l.StreamReceiveWindow > 0 {
		q.MaxConnectionReceiveWindow = conn
	}
}

func (l Limits) withDefaults() Limits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.MaxFrameSize == 0 {
		l.MaxFrameSize = wire.DefaultMaxFrameSize
	}
	if l.MaxConcurrentStreams <= 0 {
		l.MaxConcurrentStreams = 64
	}
	if l.MaxRequestsInFlight <= 0 {
		l.MaxRequestsInFlight = 256
	}
	if l.MaxProgressRate == 0 {
		l.MaxProgressRate = 1000
	}
	if l.MaxSessions <= 0 {
		l.MaxSessions = 1024
	}
	def(&l.HandshakeTimeout, 10*time.Second)
	def(&l.IdleTimeout, 5*time.Minute)
	def(&l.PeerIdleTimeout, DefaultPeerIdleTimeout)
	if l.KeepAlivePeriod == 0 {
		l.KeepAlivePeriod = DefaultKeepAlivePeriod
	}
	def(&l.DrainTimeout, 30*time.Second)
	def(&l.ShutdownGrace, DefaultShutdownGrace)
	def(&l.PeerFINWait, DefaultPeerFINWait)
	def(&l.StreamWait, 10*time.Second)
	def(&l.StreamWriteStallTimeout, DefaultStreamWriteStallTimeout)
	return l
}

// Handler answers the peer's requests. HandleRequest runs on its own
// goroutine for each request; it returns the result (marshalled with
// encoding/json; a json.RawMessage is taken as is) or an error. A
// *jsonrpc.Error goes to the peer as it is; any other error becomes -32603
// with the error's text. The context is cancelled by $/cancel and when the
// session ends.
type Handler interface {
	HandleRequest(ctx context.Context, req *Request) (any, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// HandleRequest calls f.
func (f HandlerFunc) HandleRequest(ctx context.Context, req *Request) (any, error) {
	return f(ctx, req)
}

// Mux routes requests by method. Unknown methods get -32601. A Mux is
// built before use and then only read, so it is safe for concurrent use.
type Mux map[string]Handler

// HandleRequest dispatches to the handler registered for the method.
func (m Mux) HandleRequest(ctx context.Context, req *Request) (any, error) {
	if h, ok := m[req.Method]; ok {
		return h.HandleRequest(ctx, req)
	}
	return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found: "+req.Method)
}

// Hooks are the optional callbacks of a session. They run on the session's
// reading goroutines and must not block.
type Hooks struct {
	// Notification receives every notification the session does not handle
	// itself (it handles $/cancel, $/streamError, $/shutdown and progress for
	// its own calls). A $/ notification it does not know is ignored, never
	// passed here: MCP has no method under $/ (spec §1).
	Notification func(s *Session, n *jsonrpc.Request)
	// Datagram receives audio and log datagrams, and progress datagrams for
	// no call of this session, with the payload decoded to JSON.
	Datagram func(s *Session, h wire.DatagramHeader, payload json.RawMessage)
	// ProtocolError receives the error responses with a null id that the peer
	// sends about this side's misbehaviour (spec §8): a bad frame, a stream
	// injection, a datagram where none are supported.
	ProtocolError func(s *Session, e *jsonrpc.Error)
	// Closed is called once when the session has ended, with why (the same
	// as s.Err(); spec §8.2). It runs on the goroutine that closed the
	// session and must not block.
	Closed func(s *Session, e *SessionError)
	// Observe receives every Event of the session (and, in a ServerConfig,
	// the server's refusals): for metrics (package metrics). It runs on the
	// session's goroutines, at times under a lock of the session, and must
	// neither block nor call the session. Which event fires where: flow's
	// observe.go and docs/design.md, "Events and logs".
	Observe func(e Event)
}

// ServerConfig configures a Server. It is copied by NewServer; later changes
// have no effect.
type ServerConfig struct {
	// Addr is the UDP address to listen on. Default "127.0.0.1:4433".
	Addr string
	// Path is the URL path of the WebTransport endpoint. Default "/mcp-flow".
	Path string
	// TLSConfig must hold a certificate. TLS 1.3 is enforced whatever it says.
	TLSConfig *tls.Config
	// Handler answers requests after initialize. Required.
	Handler Handler
	// Info, Capabilities and Instructions go into the initialize result.
	Info         Implementation
	Capabilities json.RawMessage
	Instructions string
	// Encodings lists the encodings the server accepts. Default: all of
	// codec.Names.
	Encodings []codec.Name
	// DisableDatagrams makes the server answer datagramsSupported: false.
	DisableDatagrams bool
	// AllowedOrigins lists the Origin values a CONNECT may carry (scheme,
	// host and port, e.g. "https://app.example"); "*" allows any. A CONNECT
	// without Origin (a non-browser client) is always allowed, and so is a
	// loopback page (localhost, 127.0.0.0/8, ::1, any port) when the server
	// listens on a loopback address; any other is refused with HTTP 403
	// (spec §9).
	AllowedOrigins []string
	Limits         Limits
	Hooks          Hooks
	// HTTPHandler, if set, serves every request on the server's HTTP/3
	// listener whose method is not CONNECT, on any path: Streamable HTTP
	// over HTTP/3 for a client that followed Alt-Svc to this origin (spec
	// §10.1). It checks Host and Origin itself: AllowedOrigins governs
	// CONNECTs only, which stay the server's. Nil: such a request gets 405
	// at Path and 404 elsewhere.
	HTTPHandler http.Handler
	// Logger receives the server's logs. Default: slog.Default().
	Logger *slog.Logger
	// OnInitialize, if set, answers initialize in place of Info,
	// Capabilities and Instructions (a bridge asks its upstream server). It
	// runs on the session's reading goroutine; the session adds the
	// transport object. A *jsonrpc.Error goes to the client as it is.
	OnInitialize func(ctx context.Context, s *Session, params json.RawMessage) (*InitializeResult, error)
	// ServeStateless lets a server with OnInitialize (a bridge) take
	// 2026-07-28 requests too (spec §11.4-§11.6): they reach Handler as
	// requests of a 2025 session do, server/discover included (the server
	// answers it itself only without OnInitialize).
	ServeStateless bool
	// OnSession, if set, is called with each session once it is READY.
	OnSession func(*Session)
	// Auth, if set, checks the access token of every CONNECT (docs/spec.md
	// §9.1, beyond the guide; a bearer.Config for OAuth bearer tokens):
	// after the Origin and before the session takes a slot; a refusal is
	// the Authenticator's answer (400, 401 or 403 with a WWW-Authenticate
	// challenge). The verified token is the session's (Session.TokenInfo);
	// the session is shut down gracefully when the token expires. Nil: no
	// authentication.
	Auth Authenticator
	// FleetKey, if set, is the secret the servers of a fleet share
	// (docs/deploy.md, "Fleet"): the QUIC stateless-reset key and the
	// address-validation token key are derived from it, so that any server
	// of the fleet resets a connection another one held (a client of a
	// killed server learns it in a round trip, not its idle timeout) and
	// accepts another's tokens. Nil: no stateless resets, and a token key
	// of this process only.
	FleetKey *FleetKey
	// ConnectionIDs, if set, makes the connection IDs the server issues
	// (quic.Transport.ConnectionIDGenerator): mcp-flow-server's -server-id
	// gives one of package internal/quiclb, whose IDs name the server, so
	// that a load balancer routes by them (docs/deploy.md, "Connection IDs
	// that name their server"). All servers of a fleet must issue IDs of
	// one length. Nil: quic-go's random 4-octet IDs.
	ConnectionIDs quic.ConnectionIDGenerator
	// PacketConn, if set, is the UDP socket to serve on instead of binding
	// Addr: one that outlives the process, held by its supervisor
	// (systemd's socket activation, mcp-flow-server -udp-fd) and handed to
	// each process in turn, so that the address never closes across a
	// restart or a crash. Datagrams that come between two processes wait
	// in the socket for the next one (which resets their connections, with
	// a FleetKey) instead of drawing ICMP port unreachable, on which nginx
	// stops relaying the flow's answers (docs/deploy.md, "Fleet"). Close
	// closes it (the supervisor's copy stays open).
	PacketConn net.PacketConn
	// faults break rules on purpose, for testing conformance runners only;
	// set by internal/faults.Set, never by a command.
	faults faults.Faults
}

// ClientConfig configures Dial. It is copied; later changes have no effect.
type ClientConfig struct {
	// TLSConfig verifies the server (see package certs for pinned hashes).
	TLSConfig *tls.Config
	// Encodings in order of preference. Default: cbor, json.
	Encodings []codec.Name
	// DisableDatagrams stops the client from asking for datagrams.
	DisableDatagrams bool
	// Info and Capabilities go into the initialize params. ProtocolVersion
	// defaults to protocol.MCPLatest.
	// ProtocolVersion "2026-07-28" (protocol.MCP20260728) makes the
	// session stateless: Dial sends $/hello and no initialize, and every
	// request carries the version and Capabilities in its _meta (spec
	// §11). Dial fails if the server refuses $/hello.
	Info            Implementation
	Capabilities    json.RawMessage
	ProtocolVersion string
	// Hello makes a 2025 session settle the transport with $/hello before
	// initialize; if the server refuses it, Dial falls back to the guide's
	// initialize (spec §11.4).
	Hello bool
	// Handler answers the server's requests (sampling/createMessage,
	// roots/list, elicitation/create). Default: every request gets -32601.
	Handler Handler
	// Header is sent with the CONNECT request (Origin, for instance).
	Header http.Header
	// Token, if set, is asked for an OAuth access token on every dial
	// (so a token file that was refreshed is read again), which the CONNECT
	// carries as "Authorization: Bearer <token>" (docs/spec.md §9.1). An
	// error from it fails Dial. A server that refuses the token answers
	// 401 or 403, and Dial returns a *RefusedError.
	Token  func(ctx context.Context) (string, error)
	Limits Limits
	Hooks  Hooks
	Logger *slog.Logger
	// Transport, if set, dials the session instead of a new
	// webtransport.Transport (tests use it to share or tune QUIC).
	Transport WebTransportDialer
	// RefusedRetries bounds how many times Dial dials again when the
	// server's QUIC stack refuses the connection with CONNECTION_REFUSED
	// (its accept queue was full: nothing reached the server's
	// application, so a redial is safe; spec §8). The waits start at 50 ms
	// and double up to 1 s, with jitter; ctx ends them. Nothing else is
	// retried. Default DefaultRefusedRetries (5, 1.55 s of waiting at most);
	// negative: none.
	RefusedRetries int
	// DialSession, if set, opens the session instead of Transport: another
	// WebTransport dialect, such as internal/draft02's for draft-02 servers.
	// TLSConfig is then DialSession's business.
	DialSession func(ctx context.Context, url string, h http.Header) (*http.Response, WTSession, error)
	// Handshaked, if set, is called once each QUIC handshake with the
	// server completes, before the CONNECT goes out, when Dial makes its own
	// transport (Transport and DialSession nil): a caller racing another
	// transport learns that UDP gets through (package fallback, spec §10.2).
	Handshaked func()
	// Mover, if set, holds the session while it is open, so that its Move
	// migrates it to a new local socket with every other session dialled
	// with it (spec §2.1): a program's answer to a change of network. Only
	// a session whose connection Dial makes itself (Transport and
	// DialSession nil) can migrate; Move counts the others' ErrNoMigration.
	Mover *Mover
}

// A WebTransportDialer dials WebTransport sessions; *webtransport.Transport
// is one.
type WebTransportDialer interface {
	Dial(ctx context.Context, url string, h http.Header) (*http.Response, *webtransport.Session, error)
}
