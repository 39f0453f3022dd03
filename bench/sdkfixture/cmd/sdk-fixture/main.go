// Command sdk-fixture serves the benchmark's go-sdk server over stdio, with
// no cap on line length, so that large base64 results can be measured; with
// -http ADDR, over the go-sdk's Streamable HTTP on ADDR instead (printing
// "listening URL" on stdout), for `mcp-flow bench -http`.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:8090) instead of stdio")
	flag.Parse()
	if *addr == "" {
		t := &mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout, MaxLineLength: -1}
		if err := sdkfixture.NewServer().Run(context.Background(), t); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := sdkfixture.NewServer()
	fmt.Printf("listening http://%s/mcp\n", ln.Addr())
	log.Fatal(http.Serve(ln, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
}
