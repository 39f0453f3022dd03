package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/fallback"
)

// probeWait bounds bridge stdio's probe at start when neither handshake
// answers (a server not yet up): past the QUIC handshake's own 5 s idle
// timeout, short of a blackholed TCP connect.
const probeWait = 10 * time.Second

// bridgeStdio serves the host on in and out. Unless -webtransport draft02
// is set, it first probes which transport reaches the server (-transport,
// -fallback-budget: fallback.Probe) and says which and why, once, on
// stderr: MCP-Flow is the stdio front (bridge.Stdio), Streamable HTTP the
// host's session relayed to the server's TCP side (fallback.Relay). A probe
// that reaches neither leaves the choice to the stdio front, which dials
// when the host's initialize comes: if that first dial fails for good
// (nothing answers within the handshake budget, an untrusted certificate,
// HTTP 404), the bridge answers the initialize with the cause, prints it
// in one line and exits 3; a server lost later is reconnected to.
func bridgeStdio(ctx context.Context, o options, sc bridge.StdioConfig, in io.Reader, stdout, stderr io.Writer) int {
	if o.webtransport != "draft02" {
		t := fallback.Transport(o.transport)
		if o.transport == "auto" {
			t = fallback.Auto
		}
		cfg := fallback.Config{Flow: sc.Client, Transport: t, Budget: o.fallbackBudget}
		pctx, cancel := context.WithTimeout(ctx, probeWait)
		start := time.Now()
		chosen, why, err := fallback.Probe(pctx, o.url, cfg)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "mcp-flow: bridge stdio: %s (no handshake at start: %s; dialling it when the host initializes)\n",
				fallback.MCPFlow, bridge.Diagnose(o.url, err, time.Since(start)).Why)
		} else {
			fmt.Fprintf(stderr, "mcp-flow: bridge stdio: %s (%s)\n", chosen, why)
		}
		if chosen == fallback.StreamableHTTP {
			if err := fallback.Relay(ctx, o.url, cfg, in, stdout); err != nil {
				fmt.Fprintf(stderr, "mcp-flow: bridge: %v\n", err)
				return exitConnect
			}
			return exitOK
		}
	}
	// A server that cannot be reached at all when the host initializes
	// (bridge.UnreachableError.Final) ends the bridge with exitConnect and
	// one line saying why; one lost later is reconnected to.
	sc.ExitIfUnreachable = true
	b := bridge.NewStdio(sc)
	if err := b.Run(ctx, in, stdout); err != nil {
		fmt.Fprintf(stderr, "mcp-flow: bridge: %v\n", err)
		return exitConnect
	}
	return exitOK
}
