package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
)

// TestPublicURLBehindForwarder (issue 40): mcp-flow-server on port P,
// reached through a forwarder on another port R of the same address, UDP
// dropped and TCP forwarded (a load balancer on 443 in front of servers on
// other ports). Without -public-url the CLI's Streamable HTTP fallback is
// refused, and the CLI says which host was refused and which flag allows
// it, not "Forbidden"; with -public-url https://127.0.0.1:R/mcp-flow the
// call works, and the download link of a result too large to inline names
// R (its bytes come through the forwarder).
func TestPublicURLBehindForwarder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cli, srvBin := build(t, dir, "../mcp-flow"), build(t, dir, "../mcp-flow-server")

	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		url, hash := flowtest.ServerProcess(t, srvBin)
		o := forwarder(t, url, "127.0.0.1:0")
		if o == nil {
			t.Fatal("no forwarder on a free port")
		}
		at := "https://" + o.Addr() + "/mcp-flow"
		out, errs, code := runCLI(t, cli, "-cert-hash", hash, "-url", at, "-handshake-timeout", "2s", "call", "echo", "text=hi")
		want := fmt.Sprintf(`mcp-flow: the server refused Streamable HTTP with HTTP 403: host not allowed: Host "%s" names another port than the listener's`, o.Addr())
		if code != exitConnect || out != "" || !strings.Contains(errs, want) || !strings.Contains(errs, "-public-url") {
			t.Fatalf("call echo through a forwarder on another port, no -public-url: exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q, naming -public-url", code, out, errs, exitConnect, want)
		}
		t.Logf("refused as expected: %s", strings.TrimSpace(errs))
	})

	t.Run("public-url", func(t *testing.T) {
		t.Parallel()
		var o *lossrelay.Origin
		var hash string
		// The forwarder's port must be known before the server starts (its
		// -public-url names it) and is bound after: another process may
		// take it in between, so a few ports are tried.
		for range 3 {
			r := freePort(t)
			var url string
			url, hash = flowtest.ServerProcess(t, srvBin, "-public-url", "https://127.0.0.1:"+r+"/mcp-flow")
			if o = forwarder(t, url, "127.0.0.1:"+r); o != nil {
				break
			}
		}
		if o == nil {
			t.Fatal("no forwarder on a port chosen before the server started, in 3 tries")
		}
		at := "https://" + o.Addr() + "/mcp-flow"
		out, errs, code := runCLI(t, cli, "-cert-hash", hash, "-url", at, "-handshake-timeout", "2s", "call", "echo", "text=hi")
		if code != 0 || out != "hi\n" || !strings.Contains(errs, "mcp-flow: streamable-http") {
			t.Fatalf("call echo through a forwarder with -public-url: exit %d, stdout %q, stderr:\n%s", code, out, errs)
		}
		// Past the front's inline limit (8 MiB) the result is a download
		// link, which must name the forwarder: its bytes come through it.
		const n = 9 << 20
		_, before := o.TCP.Stats()
		out, errs, code = runCLI(t, cli, "-cert-hash", hash, "-url", at, "-handshake-timeout", "2s", "call", "generate", "bytes="+strconv.Itoa(n))
		_, after := o.TCP.Stats()
		sum := sha256.Sum256([]byte(out))
		if code != 0 || len(out) != n || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(n) {
			t.Fatalf("generate 9 MiB through a forwarder with -public-url: exit %d, %d bytes, stderr:\n%s", code, len(out), errs)
		}
		if got := after.Bytes - before.Bytes; got < n {
			t.Fatalf("generate 9 MiB: the forwarder carried %d bytes to the client, fewer than the payload: the download link did not name -public-url", got)
		}
	})
}

// forwarder starts a lossrelay.Origin at addr in front of the server at
// url, UDP dropped and TCP forwarded; nil if addr cannot be bound.
func forwarder(t *testing.T, serverURL, addr string) *lossrelay.Origin {
	t.Helper()
	o, err := flowtest.OriginAt(t, serverURL, addr, lossrelay.Blocked, lossrelay.Blocked)
	if err != nil {
		t.Logf("forwarder at %s: %v", addr, err)
		return nil
	}
	return o
}

// freePort is a port of 127.0.0.1 free on both UDP and TCP a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	for range 8 {
		uc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(uc.LocalAddr().String())
		ln, err := net.Listen("tcp", "127.0.0.1:"+port)
		uc.Close()
		if err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatal("no port free on both UDP and TCP in 8 tries")
	return ""
}
