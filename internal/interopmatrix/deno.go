package main

import (
	"context"
	"fmt"
	"log"
	"path/filepath"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/conformance"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
)

// denoServerPeer names the column of the TypeScript SDK server on Deno.
const denoServerPeer = "TS SDK server on Deno"

// denoServerColumn runs the conformance runner against an MCP server of the
// official TypeScript SDK v2 that Deno serves over MCP-Flow through
// js/src/server.js (js/test/deno-sdk-server.mjs; issue 39), as
// js/deno_sdk_test.go's TestDenoSDKServer does. A peer that cannot be
// installed or started gets a failing deno.run cell.
func denoServerColumn(cert *certs.Cert) column {
	detail := "the official TypeScript SDK v2 server (@modelcontextprotocol/server) served over MCP-Flow by js/src/server.js in Deno 2.9 (js/test/deno-sdk-server.mjs), dialled in WebTransport draft-02; server mode"
	rs, err := runDenoServer(cert)
	if err != nil {
		return column{peer: denoServerPeer, cells: map[string]string{"deno.run": "fail: " + err.Error()}, detail: detail + ": did not run"}
	}
	return column{peer: denoServerPeer, cells: cells(rs), detail: detail}
}

func runDenoServer(cert *certs.Cert) ([]conformance.Result, error) {
	certPEM, keyPEM, err := cert.PEM()
	if err != nil {
		return nil, err
	}
	js, _ := filepath.Abs("js")
	srv, err := browsertest.StartDenoServer(log.Printf, js, "test/deno-sdk-server.mjs", certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{cert.Hash()}})
	url := fmt.Sprintf("https://127.0.0.1:%d/mcp-flow", srv.Port)
	return conformance.RunServer(context.Background(), conformance.Target{URL: url, TLS: tlsConf}, conformance.ServerChecks(), conformance.Options{}), nil
}
