// Command sdk-fixture serves the benchmark's go-sdk server over stdio, with
// no cap on line length, so that large base64 results can be measured.
package main

import (
	"context"
	"log"
	"os"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	t := &mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout, MaxLineLength: -1}
	if err := sdkfixture.NewServer().Run(context.Background(), t); err != nil {
		log.Fatal(err)
	}
}
