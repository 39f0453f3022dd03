package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/metrics"
)

// bridgeHTTP serves the Streamable HTTP front until SIGINT or SIGTERM, then
// drains it like mcp-flow-server: the requests in flight are answered
// (within -drain), the sessions end, the process exits 0. A second signal
// closes at once.
func bridgeHTTP(o options, sc bridge.StdioConfig, log *slog.Logger, stderr io.Writer) int {
	if code := o.bridgeAuth.check(os.Getenv("MCP_FLOW_BRIDGE_TOKEN") != "", sc.Token != nil, stderr); code != exitOK {
		return code
	}
	var origins []string
	if o.origins != "" {
		origins = strings.Split(o.origins, ",")
	}
	if o.publicURL != "" {
		if _, err := bridge.CheckPublicURL(o.publicURL); err != nil {
			fmt.Fprintf(stderr, "mcp-flow: -public-url: %v\n", err)
			return exitUsage
		}
	}
	var observe func(flow.Event)
	if o.metrics != "" {
		// -metrics: the front's HTTP requests and its MCP-Flow sessions
		// (role client), on an admin listener of their own.
		m := metrics.New()
		at, closeMetrics, err := m.ListenAndServe(o.metrics, slog.NewLogLogger(log.Handler(), slog.LevelDebug))
		if err != nil {
			fmt.Fprintf(stderr, "mcp-flow: -metrics: %v\n", err)
			return exitConnect
		}
		defer closeMetrics()
		fmt.Fprintf(stderr, "mcp-flow: metrics at http://%s%s (an admin listener: keep it off the public network)\n", at, metrics.Path)
		observe = m.Observe
		sc.Client.Hooks.Observe = observe
	}
	listen := o.listen
	if listen == "" {
		listen = defaultBridgeListen
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-flow: bridge: %v\n", err)
		return exitConnect
	}
	hc := bridge.HTTPConfig{Stdio: sc, AllowedOrigins: origins, Token: os.Getenv("MCP_FLOW_BRIDGE_TOKEN"),
		MaxSessions: o.maxSessions, IdleTimeout: o.idleTimeout, MaxBodiesInFlight: o.maxBodiesInFlight,
		MaxSessionHeld: o.maxSessionHeld, MaxHeld: o.maxHeld, MaxClientBodies: o.maxClientBodies,
		MaxSessionOffload: o.maxSessionOffload, MaxOffload: o.maxOffload, PublicURL: o.publicURL,
		DownloadLifetime: o.downloadLifetime, WriteTimeout: o.writeTimeout, Observe: observe}
	// -auth-*: the front's own clients' tokens; its resource is its
	// endpoint unless -auth-audience says otherwise.
	endpoint := o.publicURL
	if endpoint == "" {
		endpoint = "http://" + ln.Addr().String() + "/mcp"
	}
	if code := o.bridgeAuth.front(&hc, endpoint, stderr); code != exitOK {
		ln.Close()
		return code
	}
	h := bridge.NewHTTPFront(hc)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	if path, meta := h.Metadata(); meta != nil {
		mux.Handle(path, meta) // RFC 9728 §3: where the challenges point
	}
	// No ReadTimeout or WriteTimeout: SSE streams last as long as their
	// requests; the front bounds bodies and held bytes itself.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: o.readHeaderTimeout, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stderr, "mcp-flow: Streamable HTTP endpoint http://%s/mcp -> %s\n", ln.Addr(), o.url)
	select {
	case err := <-served:
		fmt.Fprintf(stderr, "mcp-flow: bridge: %v\n", err)
		h.Close()
		return exitConnect
	case s := <-sig:
		log.Info("shutting down", "signal", s.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.drain)
	defer cancel()
	go func() {
		select {
		case <-sig:
			log.Warn("second signal: closing now")
			cancel()
		case <-ctx.Done():
		}
	}()
	// The server stops listening and waits for its connections; the front
	// answers what is in flight and ends its sessions, which ends their
	// GET streams.
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Shutdown(ctx) }()
	if err := h.Shutdown(ctx); err != nil {
		log.Warn("drain cut short", "err", err)
	}
	if err := <-srvDone; err != nil {
		srv.Close()
	}
	<-served
	return exitOK
}
