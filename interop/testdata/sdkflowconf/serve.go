// Command sdkflowconf serves the go-sdk v1.8 conformance server (the
// server the official conformance suite's server mode is run against)
// over MCP-Flow through bridge/sdkflow.Serve, in process: no pipe, no
// NDJSON, no Streamable HTTP between the go-sdk server and MCP-Flow.
//
// It is no package of the module: interop's TestOfficialConformanceSDKFlow
// builds it with go build -overlay, beside a copy of the go-sdk's
// conformance/everything-server/main.go whose main is renamed (its tools,
// resources, prompts and handlers are the server's). It prints "url: URL"
// and "cert-sha256: HASH" as mcp-flow-server does (flowtest.ServerProcess
// runs it; the flags it passes are not read), and serves until SIGTERM,
// then exits 0.
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcp-flow/mcp-flow/bridge/sdkflow"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	// As the go-sdk's own main builds it.
	server := mcp.NewServer(&mcp.Implementation{Name: "mcp-conformance-test-server", Version: "1.0.0"}, &mcp.ServerOptions{
		CompletionHandler:  completionHandler,
		SubscribeHandler:   subscribeHandler,
		UnsubscribeHandler: unsubscribeHandler,
	})
	registerTools(server)
	registerResources(server)
	registerPrompts(server)
	go watchedResourceUpdater(context.Background(), server)

	cert, err := certs.GenerateDev(certs.DevOptions{})
	if err != nil {
		log.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := flow.ServerConfig{Addr: "127.0.0.1:0", TLSConfig: certs.ServerTLSConfig(cert), Logger: logger}
	sdkflow.Serve(&cfg, server, &sdkflow.ServerOptions{Logger: logger})
	srv, err := flow.NewServer(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("url: %s\ncert-sha256: %s\n", srv.URL(), cert.HashHex())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	_ = srv.Serve() // ends when Close is called
}
