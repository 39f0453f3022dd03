// Command chainclient puts MCP-Flow between an MCP client under test and the
// server it is pointed at, for the official conformance suite's client mode:
//
//	chainclient <server-url>
//
// runs $CHAIN_CLIENT (the go-sdk's conformance client) against a Streamable
// HTTP front → MCP-Flow → Streamable HTTP upstream → <server-url>, with the
// suite's environment passed through, and exits with the client's status.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
)

func main() {
	if len(os.Args) != 2 || os.Getenv("CHAIN_CLIENT") == "" {
		fmt.Fprintln(os.Stderr, "usage: CHAIN_CLIENT=client chainclient <server-url>")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	switch d := os.Getenv("MCP_FLOW_DEBUG"); d {
	case "", "0":
	case "1":
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	default: // a file to append the debug log to
		f, err := os.OpenFile(d, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fatal(err)
		}
		log = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cert, err := certs.GenerateDev(certs.DevOptions{})
	if err != nil {
		fatal(err)
	}
	cfg := flow.ServerConfig{Addr: "127.0.0.1:0", TLSConfig: certs.ServerTLSConfig(cert), Logger: log}
	bridge.NewHTTPUpstream(bridge.HTTPUpstreamConfig{Endpoint: os.Args[1], Logger: log}).Configure(&cfg)
	srv, err := flow.NewServer(cfg)
	if err != nil {
		fatal(err)
	}
	if err := srv.Listen(); err != nil {
		fatal(err)
	}
	go srv.Serve()
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{cert.Hash()}})
	front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(), Logger: log,
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: log}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal(err)
	}
	go http.Serve(ln, front)
	cmd := exec.CommandContext(context.Background(), os.Getenv("CHAIN_CLIENT"), "http://"+ln.Addr().String()+"/mcp")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	srv.Close()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "chainclient:", err)
	os.Exit(1)
}
