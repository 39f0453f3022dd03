package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// startBridgeHTTP runs `cli args... -listen ADDR` (args: a bridge http
// command line) on a free port and returns its endpoint once it announced
// it, its stderr, the process and a channel that gets its exit (put back
// by whoever takes it; the test's cleanup kills it and takes it).
func startBridgeHTTP(t *testing.T, cli string, args ...string) (endpoint string, stderr *flowtest.SyncBuffer, bridge *exec.Cmd, exited chan error) {
	t.Helper()
	// A free port (the bridge prints the address it listens on, too).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	bridge = exec.Command(cli, append(args, "-listen", addr)...)
	stderr = &flowtest.SyncBuffer{}
	pipe, err := bridge.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bridge.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan error, 1)
	t.Cleanup(func() {
		bridge.Process.Kill()
		<-exited
	})
	announced := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			stderr.Write([]byte(line + "\n"))
			if _, rest, ok := strings.Cut(line, "endpoint http://"); ok {
				announced <- "http://" + strings.Fields(rest)[0]
			}
		}
		exited <- bridge.Wait()
	}()
	select {
	case endpoint = <-announced:
	case err := <-exited:
		exited <- err
		t.Fatalf("the bridge exited (%v) before listening; stderr:\n%s", err, stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("the bridge announced no endpoint in 20 s; stderr:\n%s", stderr)
	}
	return endpoint, stderr, bridge, exited
}

// TestBridgeHTTPDrainsOnSIGTERM: `mcp-flow bridge http` drains on SIGTERM
// like mcp-flow-server: a call in flight when the signal comes is answered
// on its SSE stream, the process exits 0, and nothing listens after.
func TestBridgeHTTPDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	server := build(t, dir, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server")
	cli := build(t, dir, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
	url, hash, _, serverErr := startServer(t, server)

	endpoint, stderr, bridge, exited := startBridgeHTTP(t, cli, "-cert-hash", hash, "bridge", "http", url)

	post := func(sid, body string) *http.Response {
		req, _ := http.NewRequest("POST", endpoint, strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		if sid != "" {
			req.Header.Set("MCP-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST: %v; bridge stderr:\n%s", err, stderr)
		}
		return resp
	}
	const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	init := post("", initialize)
	init.Body.Close()
	sid := init.Header.Get("MCP-Session-Id")
	if init.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d; bridge stderr:\n%s\nserver stderr:\n%s", init.StatusCode, stderr, serverErr)
	}
	// A call that takes ~1 s; once its first progress event is read, it is
	// in flight.
	call := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"steps":10,"delayMs":100},"_meta":{"progressToken":"p"}}}`)
	defer call.Body.Close()
	br := bufio.NewReader(call.Body)
	var head strings.Builder
	for !strings.Contains(head.String(), "notifications/progress") {
		line, err := br.ReadString('\n')
		head.WriteString(line)
		if err != nil {
			t.Fatalf("the call's stream ended before its first progress: %q, %v; bridge stderr:\n%s", head.String(), err, stderr)
		}
	}
	if err := bridge.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), `"id":2,"result"`) {
		t.Fatalf("the call in flight at SIGTERM: %v, its stream after the signal:\n%s\nbridge stderr:\n%s", err, rest, stderr)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("the bridge after SIGTERM: %v (want exit 0); stderr:\n%s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the bridge has not exited 20 s after SIGTERM; stderr:\n%s", stderr)
	}
	// Gone: nothing listens any more.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", endpoint, strings.NewReader(initialize))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("after the bridge exited, an initialize got %d", resp.StatusCode)
	}
}
