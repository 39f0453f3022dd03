// Command exitoneclient is a client for the conformance runner's
// meta-tests: under the client contract of package conformance it
// initializes, calls the tool "scenario", prints the result it got on
// stdout, and exits 1, whatever happened. It reads no execution stream and
// reports no error: every check whose rule is that the client reports a
// failure (client.stream-error, client.invalid-ref) must fail it, although
// it called the tool and exited non-zero.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/conformance/internal/contract"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

func main() {
	if res, err := call(); err != nil {
		fmt.Fprintln(os.Stderr, "exitoneclient:", err)
	} else {
		fmt.Printf("%s\n", res)
	}
	os.Exit(1)
}

// call makes the call and returns its result as the judge sent it.
func call() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := contract.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	defer conn.Sess.CloseWithError(0, "")
	neg, err := conn.Initialize(protocol.MCPLatest, "exitoneclient")
	if err != nil {
		return nil, err
	}
	n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodInitialized, nil)
	_ = conn.Send(neg.Codec, n)
	id := jsonrpc.Int64ID(2)
	if err := conn.Send(neg.Codec, contract.Call(id)); err != nil {
		return nil, err
	}
	for {
		msgs, err := conn.ReadMessages(neg.Codec, codec.Default(codec.JSON))
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if r, ok := m.(*jsonrpc.Response); ok && r.ID == id {
				return r.Result, nil
			}
		}
	}
}
