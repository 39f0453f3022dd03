package main

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/hostcheck"
)

// uiFiles is the inspector page. ui/mcpflow.js is the npm package of js/
// as esbuild bundles it (`make ui` regenerates it; TestInspector checks it
// is current).
//
//go:embed ui
var uiFiles embed.FS

// defaultUIListen is where `mcp-flow ui` serves the inspector unless -listen
// says otherwise: loopback, so that the server's default origin policy
// (spec §9) lets the page connect.
const defaultUIListen = "127.0.0.1:7433"

// uiHandler serves the inspector and its config.json (the server URL,
// certificate hash and encodings the page connects with), behind uiGuard.
func uiHandler(o options) http.Handler {
	sub, _ := fs.Sub(uiFiles, "ui")
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServerFS(sub))
	mux.HandleFunc("/config.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(map[string]string{"url": o.url, "certHash": o.certHash, "encodings": o.encoding})
	})
	return uiGuard(mux)
}

// uiGuard puts framing protection on every response of next (refusals and
// 404s included): the inspector's Call and Shutdown buttons must not be
// clickjacked from another page. It answers 421 Misdirected Request, with a
// short reason, to a request whose Host hostcheck.Refused refuses, so that a
// page on a rebound name (DNS rebinding) cannot read config.json (the
// server URL and its certificate hash) or drive the inspector.
func uiGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		if reason := hostcheck.Refused(r); reason != "" {
			http.Error(w, "mcp-flow ui: "+reason, http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveUI runs `mcp-flow ui`: it serves the inspector on listen and prints
// its address until the listener fails or stop is closed.
func serveUI(o options, listen string, stderr io.Writer, stop <-chan struct{}) int {
	if !strings.HasPrefix(o.url, "https://") {
		return usage(stderr, "ui: the server URL must be https://…")
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-flow: ui: %v\n", err)
		return exitUsage
	}
	srv := &http.Server{Handler: uiHandler(o), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "mcp-flow: inspector for %s at http://%s/ (Ctrl-C ends it)\n", o.url, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		fmt.Fprintf(stderr, "mcp-flow: ui: %v\n", err)
		return exitConnect
	case <-stop:
		_ = srv.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "mcp-flow: ui: %v\n", err)
		}
		return exitOK
	}
}
