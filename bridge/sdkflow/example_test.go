package sdkflow_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"

	"github.com/mcp-flow/mcp-flow/bridge/sdkflow"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A go-sdk server and a go-sdk client, each switched to MCP-Flow by its
// transport (README.md, "The official Go SDK over MCP-Flow").
func Example() {
	ctx := context.Background()
	cert, err := certs.GenerateDev(certs.DevOptions{})
	if err != nil {
		log.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)

	// The server: an *mcp.Server as it is, served over MCP-Flow.
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "says hello"},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct{ Name string }) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + in.Name}}}, nil, nil
		})
	cfg := flow.ServerConfig{Addr: "127.0.0.1:0", TLSConfig: certs.ServerTLSConfig(cert), Logger: quiet}
	sdkflow.Serve(&cfg, server, &sdkflow.ServerOptions{Logger: quiet})
	fs, err := flow.NewServer(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := fs.Listen(); err != nil { // ListenAndServe, in a program
		log.Fatal(err)
	}
	go fs.Serve()
	defer fs.Close()

	// The client: an *mcp.Client as it is, connected over MCP-Flow.
	tlsConf, err := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{cert.Hash()}})
	if err != nil {
		log.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "caller", Version: "1"}, nil)
	session, err := client.Connect(ctx, &sdkflow.ClientTransport{URL: fs.URL(), Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: quiet}, Logger: quiet}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"Name": "MCP-Flow"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: hello, MCP-Flow
}
