// Command mcp-flow is the MCP-Flow client: it lists and calls tools and
// pings a server over WebTransport, or over Streamable HTTP at the same URL
// where no QUIC handshake answers within -fallback-budget (-transport;
// package fallback, docs/spec.md §10.2). It says once on stderr which
// transport it took and why.
//
//	mcp-flow [flags] tools [flags]
//	mcp-flow [flags] call [flags] TOOL [JSON-ARGS | key=value ...]
//	mcp-flow [flags] ping [flags]
//	mcp-flow [flags] listen [flags] [RESOURCE-URI ...]
//	mcp-flow [flags] bridge stdio [flags] [URL]
//	mcp-flow [flags] bridge http [-listen ADDR] [URL]
//	mcp-flow ui [-listen ADDR] [-cert-hash H] [URL]
//	mcp-flow bench -url URL | -http URL | -stdio 'CMD ARGS' ... [flags]
//
// Flags may come before or after the command (and, for call, after the
// tool's name; "--" ends them).
//
// ui serves the inspector page on loopback (127.0.0.1:7433 unless -listen
// says otherwise): a browser page that connects to the MCP-Flow server at
// URL with the npm package of js/, lists and calls tools, and shows results,
// progress, execution streams (bytes, rate, SHA-256), datagram counters and
// the frame log.
//
// bridge stdio makes the CLI a stdio MCP server for an MCP host (NDJSON or
// Content-Length framing, detected from the host) that reaches the MCP-Flow
// server at -url; execution streams are inlined for the host (see package
// bridge). Where UDP is blocked it relays the host's session over
// Streamable HTTP to the same URL instead (NDJSON; fallback.Relay). bridge http serves plain MCP clients a Streamable HTTP endpoint
// (/mcp) instead; on SIGINT or SIGTERM it answers the requests in flight
// (within -drain), ends its sessions and exits 0.
//
// Results go to stdout and nothing else does: with execution streams, their
// raw bytes alone (the rest of the content then goes to stderr), or with
// -out each stream into a new file; without, the text content; with -json,
// the JSON result alone. Binary stream bytes never go to a terminal: the CLI
// refuses (exit 2) and says to pipe stdout or use -out; text/* streams may.
// Progress, transfer meters (bytes, rate, and an ETA when the server told
// the streams' size: spec §6.3), the server's log messages (one line each,
// "log LEVEL LOGGER: DATA") and the CLI's own logs go to stderr; status
// lines are drawn only when stderr is a terminal. -audio-out FILE writes the
// PCM of the call's audio datagrams to FILE.
//
// listen prints the server's change notifications as they come, one JSON
// line each on stdout: with -mcp-version 2026-07-28 those of a
// subscriptions/listen for every list change and the URIs' updates (its
// acknowledgement first), on a 2025 session the list changes that come
// unasked, also over the Streamable HTTP fallback (docs/spec.md §11.7). It
// runs until Ctrl-C, which ends it with 0.
//
// SIGUSR1, and once -migrate-after after the session connected (or the
// bridge started), moves every MCP-Flow session of the CLI to a new local
// UDP socket, as a change of network would (docs/spec.md §2.1); the CLI
// says so on stderr.
//
// Ctrl-C (SIGINT) or SIGTERM cancels the call in flight with $/cancel, ends
// the session and exits 130; a second Ctrl-C exits at once.
//
// Exit codes: 0 success; 1 the server answered with an error (a JSON-RPC
// error, or a tool result with isError); 2 usage; 3 could not connect or
// initialize, or (bridge stdio -exit-on-disconnect) lost the server; 4 an
// execution stream failed or was cut off; 5 -timeout expired; 130
// interrupted.
package main

// This file is long because run is the CLI's one flag set and the dispatch of
// every subcommand the package comment above lists.

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/fallback"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/draft02"
	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

const (
	exitOK      = 0
	exitRemote  = 1
	exitUsage   = 2
	exitConnect = 3
	exitStream  = 4
	exitTimeout = 5
	// exitInterrupted is the shell's 128+SIGINT.
	exitInterrupted = 130
	defaultURL      = "https://127.0.0.1:4433" + flow.DefaultPath
	// defaultBridgeListen is where bridge http listens unless -listen says
	// otherwise (ui's default is defaultUIListen).
	defaultBridgeListen = "127.0.0.1:8080"
	// defaultHandshake is how long the CLI waits for the server's
	// initialize answer: longer than mcp-flow-server's own wait with a
	// stdio -upstream (60 s, for a first `npx -y …` that downloads its
	// package), so that the server gives up first and says why.
	defaultHandshake = 65 * time.Second
	usageSummary     = `usage: mcp-flow [flags] COMMAND [flags] [ARGS]
commands:
  tools                                  list the server's tools and their arguments
  call TOOL [JSON-ARGS | key=value ...]  call a tool
  ping                                   ping the server
  listen [RESOURCE-URI ...]              print the server's change notifications as JSON lines until Ctrl-C
  bridge stdio|http [URL]                serve a stdio or Streamable HTTP MCP endpoint in front of the server
  ui [URL]                               serve the inspector page (on 127.0.0.1:7433; -listen)
  bench -url URL | -http URL | -stdio CMD  measure a server: large result, echo, open-loop ping (-json, -svg)
flags may come before or after the command ("--" ends them)`
)

func main() {
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	qlogdir.Wait(qlogdir.ExitBound)
	os.Exit(code)
}

// limits are the session limits the flags set (spec §8).
func (o options) limits() flow.Limits {
	return flow.Limits{PeerIdleTimeout: o.peerIdle, KeepAlivePeriod: o.keepAlive, HandshakeTimeout: o.handshake}
}

type options struct {
	url, encoding, certHash, caFile, out string
	audioOut                             string
	webtransport                         string
	transport                            string
	fallbackBudget                       time.Duration
	mcpVersion                           string
	insecure, raw, debug                 bool
	timeout                              time.Duration
	inlineLimit                          int64
	listen, origins                      string
	maxSessions                          int
	idleTimeout                          time.Duration
	peerIdle, keepAlive                  time.Duration
	handshake                            time.Duration
	exitOnDisconnect                     bool
	reconnectWait                        time.Duration
	drain, readHeaderTimeout             time.Duration
	maxBodiesInFlight                    int
	maxSessionHeld, maxHeld              int
	maxClientBodies                      int
	maxSessionOffload, maxOffload        int64
	publicURL                            string
	downloadLifetime, writeTimeout       time.Duration
	metrics                              string // bridge http: -metrics ADDR
	tokenFile                            string // -token-file (tokenSource)
	migrateAfter                         time.Duration
	streamDir                            string
	bridgeAuth                           bridgeAuthFlags // bridge: -auth-*, -pass-token, -token-file (bridge_auth.go)
	// audio receives the call's audio datagrams (-audio-out).
	audio *audioSink
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp-flow", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.url, "url", envOr("MCP_FLOW_URL", defaultURL), "server URL (or $MCP_FLOW_URL)")
	fs.StringVar(&o.encoding, "encoding", "cbor,json", "encodings in order of preference, comma-separated: cbor, protobuf, json")
	fs.StringVar(&o.certHash, "cert-hash", os.Getenv("MCP_FLOW_CERT_HASH"), "pin the server certificate's SHA-256 (hex or base64; or $MCP_FLOW_CERT_HASH)")
	fs.StringVar(&o.caFile, "ca", "", "PEM file of CA certificates to verify the server with")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding an OAuth access token for a server that asks for one (docs/spec.md §9.1): sent as Authorization: Bearer, read again on every connection (so a renewed file is picked up); never logged")
	fs.BoolVar(&o.insecure, "insecure", false, "accept any server certificate (development only)")
	fs.StringVar(&o.mcpVersion, "mcp-version", protocol.MCPLatest, "the MCP revision the client commands speak: "+strings.Join(protocol.MCPVersions(), ", ")+" (initialize), or "+protocol.MCP20260728+" (stateless: $/hello, per-request _meta, no initialize; spec §11); the bridges speak each client's own")
	fs.StringVar(&o.transport, "transport", "auto", "auto: MCP-Flow where its QUIC handshake answers within -fallback-budget, else Streamable HTTP at the same URL (the server's TCP side, spec §10.2); mcp-flow or streamable-http forces one")
	fs.DurationVar(&o.fallbackBudget, "fallback-budget", fallback.DefaultBudget, "-transport auto: how long MCP-Flow's QUIC handshake may take before Streamable HTTP is dialled too")
	fs.StringVar(&o.webtransport, "webtransport", "auto", "WebTransport version of the server: current, draft02 (as the v0.1 examples serve), or auto (current, else draft02 when the server needs it; the bridges too, and remember it for their reconnections)")
	fs.StringVar(&o.out, "out", "", "write execution streams to files in this directory instead of stdout")
	fs.StringVar(&o.audioOut, "audio-out", "", "call: write the PCM bytes of the call's audio datagrams ({seq, data}, as tone sends them) to this file, in order of arrival; late ones are dropped, lost ones missing (stderr counts both)")
	fs.BoolVar(&o.raw, "json", false, "print the raw JSON result instead of its content")
	fs.DurationVar(&o.timeout, "timeout", 0, "give up after this long, with exit status 5 (0: no limit)")
	fs.DurationVar(&o.handshake, "handshake-timeout", defaultHandshake, "how long the server may take to answer initialize (a server with a stdio -upstream may first be starting it: mcp-flow-server waits up to 60 s for that)")
	fs.BoolVar(&o.debug, "debug", os.Getenv("MCP_FLOW_DEBUG") == "1", "debug logs on stderr (also MCP_FLOW_DEBUG=1; the flag wins)")
	fs.Int64Var(&o.inlineLimit, "inline-limit", 8<<20, "bridge: largest execution stream inlined for the host; larger ones become resource_link files")
	fs.StringVar(&o.streamDir, "stream-dir", "", "bridge: directory for the files of streams past -inline-limit (default: a temporary directory per session); they are deleted when the session ends")
	fs.StringVar(&o.listen, "listen", "", "address to listen on: for bridge http, of the Streamable HTTP endpoint (/mcp; default "+defaultBridgeListen+"; $MCP_FLOW_BRIDGE_TOKEN sets a bearer token); for ui, of the inspector page (default "+defaultUIListen+")")
	fs.StringVar(&o.origins, "allow-origin", "", "bridge http: comma-separated Origins allowed besides the default (pages on this machine, when -listen is a loopback address; spec §9); * allows any")
	fs.IntVar(&o.maxSessions, "max-sessions", 256, "bridge http: sessions open at once; more get 503")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 30*time.Minute, "bridge http: end a session idle this long (its id then gets 404)")
	fs.DurationVar(&o.drain, "drain", 30*time.Second, "bridge http: on SIGINT or SIGTERM, how long the requests in flight may take before the bridge closes")
	fs.DurationVar(&o.readHeaderTimeout, "read-header-timeout", 10*time.Second, "bridge http: how long a client may take to send its request headers")
	fs.IntVar(&o.maxBodiesInFlight, "max-bodies-in-flight", 256<<20, "bridge http: bytes of request bodies read at once over all sessions; past it, 503")
	fs.IntVar(&o.maxSessionHeld, "max-session-held", 64<<20, "bridge http: bytes of SSE events one session may hold for slow or absent readers")
	fs.IntVar(&o.maxHeld, "max-held", 1<<30, "bridge http: bytes of SSE events all sessions may hold")
	fs.IntVar(&o.maxClientBodies, "max-client-bodies", 64<<20, "bridge http: bytes of request bodies one client (a 2025 session; a 2026-07-28 client: its address) may have in flight until answered; past it, 503")
	fs.Int64Var(&o.maxSessionOffload, "max-session-offload", 1<<30, "bridge http: bytes of streams past -inline-limit one client may keep for download; past it the call fails")
	fs.Int64Var(&o.maxOffload, "max-offload", 4<<30, "bridge http: bytes of streams past -inline-limit all clients may keep for download")
	fs.StringVar(&o.publicURL, "public-url", "", "bridge http: the endpoint's URL as clients reach it (behind a proxy or a DNS name); download links name it, and its host is allowed in Host headers (default: the listener's address)")
	fs.DurationVar(&o.downloadLifetime, "download-lifetime", bridge.DefaultDownloadLifetime, "bridge http: how long a download link stays valid (a complete download removes it at once)")
	fs.DurationVar(&o.writeTimeout, "write-timeout", bridge.DefaultWriteTimeout, "bridge http: how long one write to a client that does not read may block before its response ends")
	fs.StringVar(&o.metrics, "metrics", "", "bridge http: serve Prometheus metrics at http://ADDR/metrics on a plain-HTTP listener of their own (an admin port, never -listen's); off by default")
	fs.DurationVar(&o.peerIdle, "peer-idle-timeout", flow.DefaultPeerIdleTimeout, "end the session when the server has been silent this long (QUIC idle timeout: how soon a dead server is noticed)")
	fs.DurationVar(&o.keepAlive, "keep-alive", flow.DefaultKeepAlivePeriod, "send a QUIC PING after this long without traffic (negative: never)")
	fs.BoolVar(&o.exitOnDisconnect, "exit-on-disconnect", false, "bridge stdio: exit with status 3 when the server session is lost, instead of reconnecting (for hosts that restart their servers); bridge http: end the client's session (404) instead")
	fs.DurationVar(&o.reconnectWait, "reconnect-wait", 10*time.Second, "bridge stdio and http: how long a request waits for a reconnection before it fails with -32006")
	fs.DurationVar(&o.migrateAfter, "migrate-after", 0, "move every MCP-Flow session to a new local UDP socket once, this long after the session connected (call, tools, ping) or the bridge started, as on a change of network (docs/spec.md §2.1); SIGUSR1 moves them at any time")
	o.bridgeAuth.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usageSummary)
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return helpOrUsage(err)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return exitUsage
	}
	if rest[0] == "bench" {
		// mcp-flow bench: its own flags after it (bench.go).
		return runBench(o, rest[1:], stdout, stderr)
	}
	if rest[0] == "ui" {
		// mcp-flow ui [flags] [URL] [flags]: flags anywhere after it.
		extra, err := parseInterleaved(fs, rest[1:])
		if err != nil {
			return helpOrUsage(err)
		}
		listen := o.listen
		if listen == "" {
			listen = defaultUIListen
		}
		switch len(extra) {
		case 0:
		case 1:
			o.url = extra[0]
		default:
			return usage(stderr, "ui takes at most one server URL")
		}
		stop := make(chan struct{})
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sig)
		go func() { <-sig; close(stop) }()
		return serveUI(o, listen, stderr, stop)
	}
	if rest[0] == "bridge" && len(rest) >= 2 {
		// Flags may also follow the mode, before or after the server URL:
		// mcp-flow bridge http -listen 127.0.0.1:8080 https://host/mcp-flow
		mode := rest[1]
		extra, err := parseInterleaved(fs, rest[2:])
		if err != nil {
			return helpOrUsage(err)
		}
		switch len(extra) {
		case 0:
		case 1:
			o.url = extra[0]
		default:
			return usage(stderr, "bridge takes at most one server URL after its mode")
		}
		rest = []string{"bridge", mode}
	}
	if c := rest[0]; c == "call" || c == "tools" || c == "ping" || c == "listen" {
		// Flags may follow the command: mcp-flow call -json echo text=hi.
		args, err := parseInterleaved(fs, rest[1:])
		if err != nil {
			return helpOrUsage(err)
		}
		rest = append([]string{c}, args...)
	}
	switch fallback.Transport(o.transport) {
	case "auto", fallback.MCPFlow, fallback.StreamableHTTP:
	default:
		return usage(stderr, "-transport is auto, mcp-flow or streamable-http")
	}
	switch o.webtransport {
	case "auto", "current", "draft02":
	default:
		return usage(stderr, "-webtransport is auto, current or draft02")
	}
	level := slog.LevelWarn
	if o.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	qlogdir.Announce(log)

	ctx, cancel := withTimeout(context.Background(), o.timeout)
	defer cancel()
	if rest[0] == "bridge" {
		if len(rest) != 2 || (rest[1] != "stdio" && rest[1] != "http") {
			return usage(stderr, "bridge takes one argument: stdio or http")
		}
		tlsConf, err := clientTLS(o)
		if err != nil {
			return usage(stderr, err.Error())
		}
		sc := bridge.StdioConfig{URL: o.url, InlineLimit: o.inlineLimit, StreamDir: o.streamDir, Logger: log,
			Client:           flow.ClientConfig{TLSConfig: tlsConf, Encodings: encodings(o.encoding), Logger: log, Limits: o.limits()},
			ExitOnDisconnect: o.exitOnDisconnect, ReconnectWait: o.reconnectWait, WebTransport: o.webtransport}
		// -token-file: the bridge's own credential, read on every dial
		// (the stdio front's reconnections, the fallback's too).
		var ok bool
		if sc.Token, ok = o.bridgeAuth.credential(stderr); !ok {
			return exitUsage
		}
		sc.Client.Token = sc.Token
		// -migrate-after and SIGUSR1 move every session of the bridge.
		var mover flow.Mover
		sc.Client.Mover = &mover
		moves := watchMoves(&mover, func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) })
		defer moves.stop()
		moves.arm(o.migrateAfter)
		if rest[1] == "http" {
			// MCP-Flow only: -transport does not apply (its clients speak
			// Streamable HTTP to it already).
			return bridgeHTTP(o, sc, log, stderr)
		}
		if !o.bridgeAuth.onlyHTTP(stderr) {
			return exitUsage
		}
		// Probes MCP-Flow, else relays to the server's Streamable HTTP.
		return bridgeStdio(ctx, o, sc, os.Stdin, stdout, stderr)
	}
	t := newTerm(stderr)
	if o.audioOut != "" {
		if rest[0] != "call" {
			return usage(stderr, "-audio-out is for call")
		}
		a, err := newAudioSink(o.audioOut)
		if err != nil {
			return usage(stderr, "-audio-out: "+err.Error())
		}
		o.audio = a
		defer func() {
			if a.f != nil {
				a.f.Close() // closed already after a call; this is for the other ways out
			}
		}()
	}
	ctx, stop := interruptible(ctx, t)
	defer stop()
	var call func(*fallback.Client) int
	events := &eventPrinter{w: stdout}
	switch cmd := rest[0]; cmd {
	case "listen":
		call = func(c *fallback.Client) int { return listen(ctx, c, o, t, rest[1:], events) }
	case "ping":
		if len(rest) != 1 {
			return usage(stderr, "ping takes no arguments")
		}
		call = func(c *fallback.Client) int {
			t0 := time.Now()
			method, params, encoding := protocol.MethodPing, any(nil), "json over Streamable HTTP"
			if s := c.Session(); s != nil {
				encoding = string(s.Encoding())
				if o.mcpVersion == protocol.MCP20260728 {
					// 2026-07-28 has no ping: a server/discover round
					// trip stands in for it.
					method, params = protocol.MethodDiscover, map[string]any{}
				}
			}
			if _, err := c.Call(ctx, method, params, nil); err != nil {
				return failure(ctx, t, o, err, "waiting for ping")
			}
			fmt.Fprintf(stdout, "pong from %s in %v (encoding %s)\n", o.url, time.Since(t0).Round(time.Microsecond), encoding)
			return exitOK
		}
	case "tools":
		if len(rest) != 1 {
			return usage(stderr, "tools takes no arguments")
		}
		call = func(c *fallback.Client) int { return listTools(ctx, c, o, t, stdout) }
	case "call":
		if len(rest) < 2 {
			return usage(stderr, "call needs a tool name")
		}
		argsJSON, err := toolArgs(rest[2:])
		if err != nil {
			return usage(stderr, err.Error())
		}
		call = func(c *fallback.Client) int { return callTool(ctx, c, rest[1], argsJSON, o, t, stdout) }
	default:
		return usage(stderr, "unknown command "+strconv.Quote(cmd))
	}

	tlsConf, err := clientTLS(o)
	if err != nil {
		return usage(stderr, err.Error())
	}
	cfg := flow.ClientConfig{
		TLSConfig: tlsConf,
		Encodings: encodings(o.encoding),
		Info:      flow.Implementation{Name: "mcp-flow-cli", Version: protocol.Version},
		Logger:    log,
		Limits:    o.limits(),
		Hooks:     mediaHooks(t, o.audio),
		Token:     o.tokenSource(),
		Mover:     new(flow.Mover),
	}
	if rest[0] == "listen" {
		cfg.Hooks = withChanges(cfg.Hooks, events)
	}
	switch v := o.mcpVersion; {
	case v == protocol.MCP20260728:
		cfg.ProtocolVersion = v
	case slices.Contains(protocol.MCPVersions(), v):
		cfg.ProtocolVersion = v
	default:
		return usage(stderr, fmt.Sprintf("-mcp-version %q: want one of %s, %s", v, strings.Join(protocol.MCPVersions(), ", "), protocol.MCP20260728))
	}
	if o.webtransport == "draft02" {
		cfg.DialSession = draft02.FlowDialer(tlsConf, nil)
	}
	waiting := time.AfterFunc(dialPatience, func() {
		t.say("mcp-flow: waiting for %s to connect and answer initialize (up to -handshake-timeout %v; a server with a stdio -upstream may be starting it)", shownURL(o.url), o.handshake)
	})
	// SIGUSR1 moves the session from here on, so that one during the dial
	// does not end the CLI (it finds no session to move).
	moves := watchMoves(cfg.Mover, t.say)
	defer moves.stop()
	fc := fallback.Config{Flow: cfg, Transport: fallback.Transport(o.transport), Budget: o.fallbackBudget}
	if fc.Transport == "auto" {
		fc.Transport = fallback.Auto
	}
	if o.webtransport == "draft02" {
		fc.Transport = fallback.MCPFlow // a v0.1 server has no TCP side
	}
	c, err := fallback.Dial(ctx, o.url, fc)
	if err != nil && o.webtransport == "auto" && draft02.Needed(err) {
		log.Debug("the server speaks WebTransport draft-02; dialing again in that dialect", "err", err)
		fc.Flow.DialSession, fc.Transport = draft02.FlowDialer(tlsConf, nil), fallback.MCPFlow
		c, err = fallback.Dial(ctx, o.url, fc)
	}
	waiting.Stop()
	if err != nil && ctx.Err() != nil {
		return failure(ctx, t, o, err, "connecting to "+o.url)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcp-flow: cannot connect to %s: %v\n", shownURL(o.url), err)
		var refused *flow.RefusedError
		if errors.As(err, &refused) && refused.Reason != "" && refused.Challenge == "" {
			// The server's own words (spec §9): which host or origin, and
			// which flag of the server allows it. (A token's refusal is
			// said by its challenge, in the line above.)
			fmt.Fprintf(stderr, "mcp-flow: the server refused %s with HTTP %d: %s\n", cmp.Or(refused.Transport, "the session"), refused.Status, refused.Reason)
		} else if errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(stderr, "mcp-flow: no initialize answer within -handshake-timeout %v (a server with a stdio -upstream may still be starting it: try a longer one)\n", o.handshake)
		}
		if strings.Contains(err.Error(), "certificate") {
			fmt.Fprintln(stderr, "mcp-flow: pass the server's -cert-hash (printed by mcp-flow-server), -ca, or -insecure for development")
		}
		return exitConnect
	}
	// Which transport, and why: once, on stderr (spec §10.2).
	t.say("mcp-flow: %s (%s)", c.Transport(), c.Reason())
	moves.arm(o.migrateAfter)
	code := call(c)
	moves.stop()
	if s := c.Session(); s != nil {
		closeSession(s, log)
	} else {
		_ = c.Close()
	}
	if o.audio != nil {
		summary, err := o.audio.close(o.audioOut)
		t.say("%s", summary)
		if err != nil {
			t.say("mcp-flow: -audio-out: %v", err)
			if code == exitOK {
				code = exitUsage
			}
		}
	}
	return code
}

// dialPatience is how long the CLI connects in silence before it says what
// it is waiting for.
const dialPatience = 2 * time.Second

// shutdownBound bounds the graceful end of the CLI's session: the CLI has
// nothing in flight when it ends one, so the drain is a round trip.
const shutdownBound = time.Second

// closeSession ends s before the CLI exits (spec §7.2): $/shutdown and a
// drain of at most shutdownBound, then Close, so that the server is not left
// holding the session until QUIC's idle timeout.
func closeSession(s *flow.Session, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
	defer cancel()
	if err := s.Shutdown(ctx, "mcp-flow CLI done"); err != nil {
		log.Debug("session did not end cleanly", "err", err)
	}
	_ = s.Close()
}

func reportErr(w io.Writer, err error) int {
	var je *jsonrpc.Error
	var se *flow.StreamError
	switch {
	case errors.As(err, &se):
		fmt.Fprintf(w, "mcp-flow: %v\n", se)
		return exitStream
	case errors.As(err, &je):
		fmt.Fprintf(w, "mcp-flow: server error %d (%s): %s\n", je.Code, je.Code, je.Message)
		return exitRemote
	}
	fmt.Fprintf(w, "mcp-flow: %v\n", err)
	return exitConnect
}
