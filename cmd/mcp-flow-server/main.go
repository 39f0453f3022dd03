// Command mcp-flow-server serves MCP over MCP-Flow (WebTransport) with test
// tools that exercise every feature of the protocol: echo, read_file,
// generate, slow, progress_burst, fail_midstream, ask_sampling, tone (audio
// datagrams), log (log messages) and whoami (who the caller's access
// token says it is). They are test tools, not
// a file server: read_file serves regular files under -root, of at most
// -read-file-max bytes (default 1 GiB), to whoever can connect.
//
// It listens on 127.0.0.1:4433 at /mcp-flow by default, on UDP for
// MCP-Flow and on TCP for Streamable HTTP (HTTP/1.1 and HTTP/2, the same
// tools, answering Alt-Svc: h3; on UDP too, to a plain HTTP/3 request;
// -no-tcp turns both off), creates a
// development certificate on first run (ECDSA P-256, valid 13 days, renewed
// when it expires), and prints the URL and certificate hash on stdout.
// With -auth-issuer and -auth-audience every client needs an OAuth access
// token of that issuer (docs/spec.md §9.1; auth.go). Logs
// go to stderr. SIGINT or SIGTERM starts a graceful shutdown: $/shutdown to
// every session, drain, exit 0.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/tools"
)

func main() {
	code := run(os.Args[1:])
	qlogdir.Wait(qlogdir.ExitBound)
	os.Exit(code)
}

// stdioUpstreamHandshake is the handshake timeout with a stdio -upstream:
// initialize waits for the subprocess to start, and a first `npx -y …`
// downloads its package first.
const stdioUpstreamHandshake = 60 * time.Second

func run(args []string) int {
	fs := flag.NewFlagSet("mcp-flow-server", flag.ContinueOnError)
	var (
		addr      = fs.String("addr", "127.0.0.1:4433", "address to listen on: UDP for MCP-Flow (WebTransport over HTTP/3), and TCP at the same host and port for Streamable HTTP (unless -no-tcp)")
		udpFD     = fs.Int("udp-fd", -1, "serve MCP-Flow on the bound UDP socket inherited as this file descriptor (3 with systemd's socket activation) instead of binding -addr; TCP takes the socket's host and port. A supervisor that holds the socket across restarts keeps the address open between two processes (docs/deploy.md, \"Fleet\")")
		noTCP     = fs.Bool("no-tcp", false, "serve MCP-Flow on UDP only: no Streamable HTTP listener on TCP (spec §10.1)")
		path      = fs.String("path", flow.DefaultPath, "URL path of the WebTransport endpoint")
		root      = fs.String("root", ".", "directory that the test tool read_file serves (no path may escape it; regular files only)")
		fileMax   = fs.Int64("read-file-max", demotools.DefaultMaxFileSize, "largest file read_file serves, in bytes")
		certFile  = fs.String("cert", "", "TLS certificate (PEM); default: a generated development certificate")
		keyFile   = fs.String("key", "", "TLS key (PEM), with -cert")
		certDir   = fs.String("cert-dir", "", "where the development certificate is kept (default $MCP_FLOW_CERT_DIR or the user cache dir)")
		public    = fs.String("public-url", "", "comma-separated URLs clients reach this server at, when not -addr (behind a forwarder, a load balancer, a DNS name): their hosts are allowed in Host headers and their origins as Origins, on both listeners; the first names the endpoint in download links (spec §9)")
		origins   = fs.String("allow-origin", "", "comma-separated Origins allowed to connect (browsers) besides loopback pages, which a loopback listener allows anyway; '*' allows any (spec §9)")
		encodings = fs.String("encodings", joinNames(codec.Names), "encodings the server accepts, in its order of preference (every encoding of package codec by default)")
		noDgram   = fs.Bool("no-datagrams", false, "answer datagramsSupported: false")
		drain     = fs.Duration("drain", 30*time.Second, "how long a shutdown waits for in-flight work")
		sessions  = fs.Int("max-sessions", 1024, "sessions held at once; past it a CONNECT gets HTTP 503 (flow.Limits.MaxSessions, spec §8)")
		peerIdle  = fs.Duration("peer-idle-timeout", flow.DefaultPeerIdleTimeout, "end a session whose client has been silent this long (QUIC idle timeout: how soon a dead client is noticed)")
		keepAlive = fs.Duration("keep-alive", flow.DefaultKeepAlivePeriod, "send a QUIC PING after this long without traffic (negative: never)")
		stall     = fs.Duration("stall-timeout", flow.DefaultStreamWriteStallTimeout, "reset an execution stream (and end a session, for the control stream) whose client has read nothing of it for this long")
		debug     = fs.Bool("debug", false, "debug logs on stderr (also MCP_FLOW_DEBUG=1)")
		upstream  = fs.String("upstream", "", "serve an existing MCP server instead of the test tools: 'stdio:CMD ARGS' (one subprocess per session) or a Streamable HTTP URL")
		handshake = fs.Duration("handshake-timeout", 0, "how long a session may take from CONNECT to the end of initialize (default 10 s; 60 s with a stdio -upstream, whose first run may download it, as npx does)")
		upToken   = fs.String("upstream-token-file", "", "file holding a bearer token the bridge sends to an HTTP -upstream (the bridge's own credential; clients' tokens are never passed through)")
		upProcs   = fs.Int("upstream-max-processes", bridge.DefaultMaxUpstreamProcesses, "with -upstream stdio:, the most upstream processes running at once (past it, initialize gets -32005)")
		upGrace   = fs.Duration("upstream-stop-grace", bridge.DefaultStopGrace, "with -upstream stdio:, how long a process has after end of input before SIGTERM, and after SIGTERM before SIGKILL")
		upQueue   = fs.Int("upstream-queue", bridge.DefaultUpstreamQueue, "with -upstream, the messages per session waiting for the upstream to take them")
		upProto   = fs.String("upstream-protocol", bridge.UpstreamAuto, "with -upstream, the MCP era spoken to it: auto (follow each client's era, falling back to the other: initialize, or a server/discover probe), 2026-07-28, or 2025 (spec §10, \"Eras\")")
		upProbe   = fs.Duration("upstream-probe-timeout", bridge.DefaultProbeTimeout, "with -upstream, how long a server/discover probe waits before the upstream counts as a 2025 server")
		fleetFile = fs.String("fleet-key-file", "", "file holding the fleet key every server behind one name shares (default $"+fleetKeyEnv+"): stateless resets a client of another, killed server accepts, and shared address tokens (docs/deploy.md, \"Fleet\")")
		serverID  = fs.String("server-id", "", "this server's ID in a fleet, 1 to 11 octets in hex (e.g. 01): its QUIC connection IDs carry it (QUIC-LB plaintext form), so that a balancer routes every packet of a connection to it whatever the client's address (docs/deploy.md)")
		sidRot    = fs.Uint("server-id-rotation", 0, "with -server-id, the QUIC-LB config rotation codepoint, 0 to 6, the same on every server of one configuration")
		genFleet  = fs.String("gen-fleet-key", "", "write a new fleet key to this file (mode 600, not overwritten) and exit")
		metricsAt = fs.String("metrics", "", "serve Prometheus metrics at http://ADDR/metrics on a plain-HTTP listener of their own (an admin port, e.g. 127.0.0.1:9464; never the public -addr); off by default")
	)
	var authF authFlags
	authF.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: mcp-flow-server [flags]\n\nServes MCP over MCP-Flow (WebTransport over HTTP/3) with test tools.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *genFleet != "" {
		if err := genFleetKey(*genFleet); err != nil {
			fmt.Fprintf(os.Stderr, "mcp-flow-server: -gen-fleet-key: %v\n", err)
			return 1
		}
		return 0
	}
	level := slog.LevelInfo
	if *debug || os.Getenv("MCP_FLOW_DEBUG") == "1" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	qlogdir.Announce(log)
	// The server says itself, in its log, when the kernel keeps its UDP
	// buffers small; quic-go's own unstructured line would repeat it.
	os.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true")

	var cert *certs.Cert
	var err error
	switch {
	case *certFile != "" || *keyFile != "":
		if *certFile == "" || *keyFile == "" {
			log.Error("-cert and -key go together")
			return 2
		}
		cert, err = certs.Load(*certFile, *keyFile)
	default:
		dir := *certDir
		if dir == "" {
			dir = certs.DefaultDir()
		}
		var created bool
		cert, created, err = certs.LoadOrCreateDev(dir, time.Now())
		if err == nil && created {
			log.Info("created a development certificate", "dir", dir, "notAfter", cert.Leaf.NotAfter.Format(time.RFC3339))
		}
	}
	if err != nil {
		log.Error("certificate", "err", err)
		return 1
	}

	auth, err := authF.setup(context.Background())
	if err != nil {
		log.Error("authentication", "err", err)
		if _, bad := err.(*authConfigError); bad {
			return 2
		}
		return 1
	}

	fleetKey, err := loadFleetKey(*fleetFile, log)
	if err != nil {
		log.Error("fleet key", "err", err)
		return 2
	}
	cids, err := connectionIDs(*serverID, *sidRot)
	if err != nil {
		log.Error("flags", "err", err)
		return 2
	}

	var udp net.PacketConn
	if *udpFD != -1 {
		if udp, err = udpSocket(*udpFD); err != nil {
			log.Error("flags", "err", err)
			return 2
		}
	}

	var encs []codec.Name
	for _, e := range strings.Split(*encodings, ",") {
		if e = strings.TrimSpace(e); e != "" {
			encs = append(encs, codec.Name(e))
		}
	}
	reg, err := tools.New(demotools.New(demotools.Config{Root: *root, MaxFileSize: *fileMax})...)
	if err != nil {
		log.Error("tools", "err", err)
		return 1
	}
	mux := flow.Mux{}
	demotools.Register(mux, reg)
	publics, err := parsePublicURLs(*public)
	if err != nil {
		log.Error("flags", "err", err)
		return 2
	}
	var allowed []string
	if *origins != "" {
		allowed = strings.Split(*origins, ",")
	}
	allowed = append(allowed, publics.origins()...)
	cfg := flow.ServerConfig{
		Addr:             *addr,
		Path:             *path,
		TLSConfig:        certs.ServerTLSConfig(cert),
		Handler:          mux,
		Info:             flow.Implementation{Name: "mcp-flow-server", Version: protocol.Version},
		Capabilities:     demotools.Capabilities(),
		Encodings:        encs,
		DisableDatagrams: *noDgram,
		AllowedOrigins:   allowed,
		FleetKey:         fleetKey,
		PacketConn:       udp,
		Limits:           flow.Limits{DrainTimeout: *drain, PeerIdleTimeout: *peerIdle, KeepAlivePeriod: *keepAlive, StreamWriteStallTimeout: *stall, MaxSessions: *sessions, HandshakeTimeout: *handshake},
		Logger:           log,
	}
	if cids != nil {
		cfg.ConnectionIDs = cids // a nil *Generator is no nil interface
	}
	var upstreamOf *bridge.Upstream
	if err := bridge.CheckUpstreamProtocol(*upProto); err != nil {
		log.Error("-upstream-protocol", "err", err)
		return 2
	}
	observe, stopMetrics, err := serveMetrics(*metricsAt, log)
	if err != nil {
		log.Error("-metrics", "err", err)
		return 1
	}
	defer stopMetrics()
	switch up := *upstream; {
	case up == "":
	case strings.HasPrefix(up, "http://") || strings.HasPrefix(up, "https://"):
		hcfg := bridge.HTTPUpstreamConfig{Endpoint: up, Queue: *upQueue, Protocol: *upProto, ProbeTimeout: *upProbe, Logger: log}
		if *upToken != "" {
			tok, err := os.ReadFile(*upToken)
			if err != nil || len(bytes.TrimSpace(tok)) == 0 {
				log.Error("-upstream-token-file: no token", "err", err)
				return 2
			}
			hcfg.Header = http.Header{"Authorization": {"Bearer " + string(bytes.TrimSpace(tok))}}
		}
		upstreamOf = bridge.NewHTTPUpstream(hcfg)
	case strings.HasPrefix(up, "stdio:") && len(strings.Fields(up[len("stdio:"):])) > 0:
		if cfg.Limits.HandshakeTimeout == 0 {
			cfg.Limits.HandshakeTimeout = stdioUpstreamHandshake
		}
		upstreamOf = bridge.NewStdioUpstream(bridge.StdioUpstreamConfig{Command: strings.Fields(up[len("stdio:"):]),
			MaxProcesses: *upProcs, StopGrace: *upGrace, Queue: *upQueue, Protocol: *upProto, ProbeTimeout: *upProbe, Logger: log, Observe: observe})
		log.Info("each session starts the upstream and waits for its initialize answer (its stderr follows here)",
			"upstream", up[len("stdio:"):], "handshake-timeout", cfg.Limits.HandshakeTimeout)
	default:
		log.Error("-upstream takes 'stdio:CMD ARGS' or an http(s) URL")
		return 2
	}
	if upstreamOf != nil {
		upstreamOf.Configure(&cfg)
	}
	cfg.Hooks.Observe = chainObserve(cfg.Hooks.Observe, observe)
	// Streamable HTTP over HTTP/3 too (spec §10.1): a client that follows
	// Alt-Svc to the UDP port with a plain request gets the TCP side's
	// handler (the front, Alt-Svc included), not 405. The front needs the
	// server's address, so it comes after listen; plainH3 is set before
	// Serve, and no request arrives earlier. With -no-tcp there is no front,
	// and such a request gets 405.
	var plainH3 http.Handler
	if !*noTCP {
		cfg.HTTPHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { plainH3.ServeHTTP(w, r) })
	}
	if auth != nil {
		// Every CONNECT needs a token (spec §9.1); the resource metadata
		// is served on HTTP/3 at its well-known paths, whatever -no-tcp.
		cfg.Auth = auth.Bearer
		next := cfg.HTTPHandler
		if next == nil {
			next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == cfg.Path {
					http.Error(w, "MCP-Flow: this endpoint takes WebTransport CONNECT requests", http.StatusMethodNotAllowed)
					return
				}
				http.NotFound(w, r)
			})
		}
		cfg.HTTPHandler = auth.wrap(next)
		log.Info("access tokens required", "issuer", auth.Issuers[0], "audience", auth.Resource, "scopes", auth.Bearer.Scopes,
			"resource_metadata", auth.Bearer.ResourceMetadataURL, "queryTokens", auth.Bearer.AllowQuery)
	}
	srv, tcpLn, err := listen(cfg, *noTCP)
	if err != nil {
		log.Error("listen", "err", err)
		return 1
	}
	var web *httpSide
	if tcpLn != nil {
		if web, err = serveHTTP(tcpLn, srv, cert, *path, publics, allowed, *sessions, observe, auth, log); err != nil {
			tcpLn.Close()
			srv.Close()
			log.Error("Streamable HTTP listener", "err", err)
			return 1
		}
		plainH3 = web.srv.Handler
		log.Info("serving Streamable HTTP (HTTP/1.1, HTTP/2) on TCP, and on UDP (HTTP/3) beside WebTransport", "url", "https://"+tcpLn.Addr().String()+*path)
	}
	// Signals are taken before the address is announced: a script (or a
	// test) that reads the URL and then sends SIGINT or SIGTERM gets a
	// clean shutdown, never the default death by signal.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	// stdout carries exactly these lines, for people and scripts.
	fmt.Printf("url: %s\ncert-sha256: %s\ncert-sha256-base64: %s\n", srv.URL(), cert.HashHex(), cert.HashBase64())
	log.Info("serving", "url", srv.URL(), "root", *root)
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	var webServed <-chan error // nil without the TCP listener
	if web != nil {
		webServed = web.served
	}
	select {
	case err := <-served:
		if web != nil {
			web.close()
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serve", "err", err)
			return 1
		}
		return 0
	case err := <-webServed:
		log.Error("Streamable HTTP listener", "err", err)
		web.front.Close()
		srv.Close()
		return 1
	case s := <-sig:
		log.Info("shutting down", "signal", s.String(), "sessions", srv.Sessions())
	}
	ctx, cancel := context.WithTimeout(context.Background(), *drain+5*time.Second)
	defer cancel()
	go func() {
		<-sig
		log.Warn("second signal: closing now")
		if web != nil {
			web.close()
		}
		srv.Close()
	}()
	// Both sides drain at once: the HTTP front's MCP-Flow sessions are
	// sessions of srv too, and its drain answers their requests in flight.
	var webErr chan error
	if web != nil {
		webErr = make(chan error, 1)
		go func() { webErr <- web.shutdown(ctx) }()
	}
	err = srv.Shutdown(ctx)
	if web != nil {
		if werr := <-webErr; werr != nil {
			log.Warn("Streamable HTTP drain cut short", "err", werr)
		}
	}
	if upstreamOf != nil {
		// No upstream process outlives the server: each gets end of
		// input, then SIGTERM, then SIGKILL, and is reaped (spec §10).
		wctx, wcancel := context.WithTimeout(context.Background(), 2**upGrace+5*time.Second)
		if werr := upstreamOf.Wait(wctx); werr != nil {
			log.Warn("upstream processes still ending", "err", werr)
		}
		wcancel()
	}
	if gone, failed := drainFailures(err); failed != nil {
		log.Warn("shutdown incomplete", "err", failed)
		return 1
	} else if gone > 0 {
		// A client killed without ending its session (kill -9, a second
		// Ctrl-C) leaves nobody to drain for: no failure of this server's,
		// so Ctrl-C on make run stays quiet.
		log.Info("shut down cleanly", "sessionsOfGoneClients", gone)
		return 0
	}
	log.Info("shut down cleanly")
	return 0
}

// joinNames is names as the -encodings flag takes them.
func joinNames(names []codec.Name) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ",")
}
