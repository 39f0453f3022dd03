package js

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
)

// choice is the transport's choice as the page saw it: its choice property
// and every ontransport event.
type choice struct {
	Transport, Reason, Detail string
	Ms                        int
}

// step is one call of the page: its error or timeout, and how long it took.
type step struct {
	Error   *string
	Timeout bool
	Ms      int
}

type fallbackRun struct {
	Version      string
	Choice       *choice
	Choices      []choice
	ConnectMs    int
	ConnectError string
	Echo         *struct {
		step
		Text string
	}
}

type stream struct {
	step
	URI              string
	Bytes            int64
	SHA256, Reported string
}

// listenStep is a subscriptions/listen of the SDK v2 client (spec §11.7):
// what its acknowledgement granted, the change it heard, toggle's answer.
type listenStep struct {
	step
	Honored struct{ ToolsListChanged bool }
	Method  string
	Toggled string
}

// check requires l to have heard toggle's tools/list_changed on a
// subscription that granted it.
func (l *listenStep) check(t *testing.T, name string) {
	t.Helper()
	if l == nil || !l.Honored.ToolsListChanged || l.Method != "notifications/tools/list_changed" || !strings.HasPrefix(l.Toggled, "toggled ") {
		t.Errorf("%s: subscriptions/listen: %+v; want the acknowledgement granting toolsListChanged, then toggle's notifications/tools/list_changed (spec §11.7)", name, l)
	}
}

type blockedRun struct {
	fallbackRun
	SessionID bool
	Tools     *struct {
		step
		Names []string
	}
	Progress *struct {
		step
		Updates [][2]float64
	}
	Cancel *struct {
		step
		ProgressSeen int
	}
	AfterCancel *struct {
		step
		Text string
	}
	Inline, Download *stream
	StreamURI        *struct{ Error *string }
	Errors           []string
	CloseMs          int
	Closed           bool
}

// TestFallbackToStreamableHTTP (issue 26): the transport falls back to the
// SDK's own StreamableHTTPClientTransport when UDP does not get through,
// and keeps MCP-Flow when it does, slowly. mcp-flow-server (the built
// binary, on 127.0.0.1:0) serves both transports at one origin; three
// lossrelay origins stand in front of it:
//   - blocked: every UDP datagram dropped, TCP forwarded. The SDK v2 and v1
//     clients, over the transport with only `fallback` set, must see one
//     ontransport event, 'streamable-http' for 'timeout' after the 800 ms
//     budget, then list the tools, call echo, get progress, cancel a call
//     (rejected with the abort's reason, no error reported by the SDK, the
//     session going on), and get generate's 1 MiB as an inlined blob whose
//     SHA-256 is generate's; v2 also reads a 9 MiB stream, past the
//     server's inline limit, through transport.stream() of its
//     resource_link download, and stream() of an mcp-flow://stream/ uri is
//     refused, saying why. SDK v2 in the 2026-07-28 era (versionNegotiation
//     auto) calls echo, gets progress and cancels through it too, and its
//     subscriptions/listen hears toggle's tools/list_changed (spec §11.7).
//   - refused: a TCP forwarder only, nothing on its UDP port: WebTransport
//     fails at once, and the fallback is taken for 'failed' before the
//     budget.
//   - slow: UDP delayed 50 ms each way (100 ms RTT, no loss): 'mcp-flow',
//     'ready', in CBOR.
//
// And without a network: a scripted fallback, forced and given by a
// factory, sends a progress update after the SDK v1 client cancelled its
// call; the transport stops it (the SDK would report an error, as it did
// now and then through the real server when the update crossed the cancel).
//
// MCP_FLOW_JS_FALLBACK_TRANSPORT (auto, mcp-flow, streamable-http) and
// MCP_FLOW_JS_FALLBACK_AFTER (ms) set the page's transport and fallbackAfter
// options, to see the checks fail without the fallback (mcp-flow: the
// blocked and refused connects fail) or with too short a budget (100: the
// slow origin falls back); MCP_FLOW_JS_FALLBACK_ONLY runs one part (blocked,
// modern, late, refused or slow).
func TestFallbackToStreamableHTTP(t *testing.T) {
	chromium := browsertest.Chromium(t)
	browsertest.NPM(t, ".", "node_modules/@modelcontextprotocol/client")

	srvURL, hash := startMCPFlowServer(t)
	su, err := url.Parse(srvURL)
	if err != nil {
		t.Fatal(err)
	}
	udpTarget, err := net.ResolveUDPAddr("udp", su.Host)
	if err != nil {
		t.Fatal(err)
	}
	tcpTarget := su.Host
	// Each origin listens on a loopback address of its own at the server's
	// port, so that the server's Host check (a loopback listener wants its
	// own port in Host, spec §9) takes it as its own (flowtest.Behind does
	// this on 127.0.0.2).
	at := func(host string) string {
		return "https://" + net.JoinHostPort(host, su.Port()) + su.Path
	}
	origin := func(host string, up, down lossrelay.Path) string {
		t.Helper()
		o, err := lossrelay.NewOrigin(net.JoinHostPort(host, su.Port()), udpTarget, tcpTarget, up, down)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return at(host)
	}
	blockedURL := origin("127.0.0.2", lossrelay.Blocked, lossrelay.Blocked)
	delay := lossrelay.Path{Delay: 50 * time.Millisecond}
	slowURL := origin("127.0.0.3", delay, delay)
	// TCP only: a QUIC packet to this address draws ICMP port unreachable.
	refused, err := lossrelay.NewTCPAt(net.JoinHostPort("127.0.0.4", su.Port()), tcpTarget, lossrelay.Path{}, lossrelay.Path{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { refused.Close() })
	refusedURL := at("127.0.0.4")

	// Chromium trusts the server's self-signed certificate for fetch over
	// TCP by the SHA-256 of its public key (WebTransport pins it by
	// serverCertificateHashes instead).
	flags := []string{"--ignore-certificate-errors-spki-list=" + spkiHash(t, tcpTarget, hash)}
	// The page (http://127.0.0.1:P) and the server are two origins: the
	// SDK's POSTs (JSON, MCP headers) go after a CORS preflight, which the
	// server's Streamable HTTP front answers for an Origin it allows (a
	// loopback page on a loopback listener, spec §9). Chromium enforces
	// CORS as it would for any page.

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pages := &http.Server{Handler: http.FileServer(http.Dir("."))}
	go pages.Serve(ln)
	t.Cleanup(func() { pages.Close() })

	const inline, download = 1 << 20, 9 << 20
	pageURL := fmt.Sprintf("http://%s/test/fallback.html?blocked=%s&slow=%s&refused=%s&hash=%s&inline=%d&download=%d&force=%s&after=%s&only=%s",
		ln.Addr(), url.QueryEscape(blockedURL), url.QueryEscape(slowURL), url.QueryEscape(refusedURL), hash, inline, download,
		os.Getenv("MCP_FLOW_JS_FALLBACK_TRANSPORT"), os.Getenv("MCP_FLOW_JS_FALLBACK_AFTER"), os.Getenv("MCP_FLOW_JS_FALLBACK_ONLY"))
	var res struct {
		Error                string
		Trail                []string
		BlockedV2, BlockedV1 *blockedRun
		Modern               *struct {
			fallbackRun
			ProtocolVersion  string
			PerRequestStream bool
			Progress         *struct {
				step
				Updates [][2]float64
			}
			Cancel *struct {
				step
				ProgressSeen int
			}
			AfterCancel *struct {
				step
				Text string
			}
			Listen *listenStep
			Errors []string
		}
		Direct *struct {
			fallbackRun
			ProtocolVersion string
			Listen          *listenStep
			Errors          []string
		}
		Late *struct {
			Choice    choice
			Cancelled *string
			LateSent  int
			Errors    []string
		}
		Refused, Slow *struct {
			fallbackRun
			Encoding        string
			ServerTransport *struct{ Type string }
		}
		Console []string
	}
	start := time.Now()
	browsertest.Drive(t, ".", "test/run.mjs", chromium, pageURL, 45*time.Second, &res, flags...)
	t.Logf("the page ran in %v", time.Since(start).Round(time.Millisecond))
	if res.Error != "" {
		t.Fatalf("the page failed: %s\nsteps:\n%s\nconsole:\n%s", res.Error, strings.Join(res.Trail, "\n"), strings.Join(res.Console, "\n"))
	}
	defer func() {
		if t.Failed() {
			b, _ := json.MarshalIndent(res, "", "  ")
			t.Logf("page result:\n%s", b)
		}
	}()

	chose := func(name string, r fallbackRun, transport, reason string) bool {
		t.Helper()
		if r.ConnectError != "" {
			t.Errorf("%s: connect failed after %d ms: %s", name, r.ConnectMs, r.ConnectError)
			return false
		}
		if r.Choice == nil || len(r.Choices) != 1 || *r.Choice != r.Choices[0] || r.Choice.Transport != transport || r.Choice.Reason != reason {
			t.Errorf("%s: choice %+v, ontransport events %+v; want one, %q for %q", name, r.Choice, r.Choices, transport, reason)
			return false
		}
		t.Logf("%s: %s (%s: %s) after %d ms; connected in %d ms", name, r.Choice.Transport, r.Choice.Reason, r.Choice.Detail, r.Choice.Ms, r.ConnectMs)
		return true
	}
	echoed := func(name string, r fallbackRun, want string) {
		t.Helper()
		if r.Echo == nil || r.Echo.Text != want {
			t.Errorf("%s: echo %+v, want %q", name, r.Echo, want)
		}
	}

	for _, r := range []*blockedRun{res.BlockedV2, res.BlockedV1} {
		if r == nil {
			continue
		}
		name := "blocked UDP, SDK " + r.Version
		if !chose(name, r.fallbackRun, "streamable-http", "timeout") {
			continue
		}
		// Not before the budget (the rule), and a guard on a budget not kept
		// (the reason says which timer fired): 801-804 ms measured with the
		// 2-core machine at load 10 (2026-12-06).
		if r.Choice.Ms < 800 || r.Choice.Ms > 8000 {
			t.Errorf("%s: fell back after %d ms, want the 800 ms budget", name, r.Choice.Ms)
		}
		if r.Tools == nil || !slices.Contains(r.Tools.Names, "echo") || !slices.Contains(r.Tools.Names, "generate") {
			t.Errorf("%s: tools/list %+v; want the server's test tools", name, r.Tools)
		}
		echoed(name, r.fallbackRun, "hi")
		if p := r.Progress; p == nil || len(p.Updates) == 0 || p.Updates[len(p.Updates)-1] != [2]float64{5, 5} {
			t.Errorf("%s: progress %+v; want notifications up to 5 of 5", name, p)
		}
		if c := r.Cancel; c == nil || c.Error == nil || !strings.Contains(*c.Error, "the user pressed Stop") {
			t.Errorf("%s: the aborted call ended with %+v; want a rejection with the abort's reason", name, c)
		} else {
			t.Logf("%s: the aborted call rejected in %d ms, after %d progress notifications", name, c.Ms, c.ProgressSeen)
		}
		if a := r.AfterCancel; a == nil || a.Text != "after" {
			t.Errorf("%s: echo after the cancel: %+v", name, a)
		}
		if in := r.Inline; in == nil || in.Bytes != inline || in.SHA256 != demotools.GenerateSHA256(inline) || in.Reported != in.SHA256 || !strings.HasPrefix(in.URI, "mcp-flow://stream/") {
			t.Errorf("%s: generate of %d bytes: %+v; want a resource blob (mcp-flow://stream/ uri) with SHA-256 %s", name, inline, in, demotools.GenerateSHA256(inline))
		} else {
			t.Logf("%s: %d bytes inlined by the server's HTTP front in %d ms", name, in.Bytes, in.Ms)
		}
		if r.Version == "v2" {
			if d := r.Download; d == nil || d.Bytes != download || d.SHA256 != demotools.GenerateSHA256(download) || d.Reported != d.SHA256 || !strings.HasPrefix(d.URI, "https://") || !strings.Contains(d.URI, "?download=") {
				t.Errorf("%s: generate of %d bytes through transport.stream(): %+v; want an https download with SHA-256 %s", name, download, d, demotools.GenerateSHA256(download))
			} else {
				t.Logf("%s: %d MiB through transport.stream() of the download link in %d ms", name, d.Bytes>>20, d.Ms)
			}
			if s := r.StreamURI; s == nil || s.Error == nil || !strings.Contains(*s.Error, "no execution streams over Streamable HTTP") {
				t.Errorf("%s: stream() of an mcp-flow://stream/ uri over the fallback: %+v; want a refusal saying why", name, s)
			}
		}
		if !r.SessionID {
			t.Errorf("%s: transport.sessionId unset; want the Streamable HTTP session's", name)
		}
		if len(r.Errors) != 0 {
			t.Errorf("%s: the SDK reported errors: %q", name, r.Errors)
		}
		if !r.Closed {
			t.Errorf("%s: onclose not called after client.close()", name)
		}
	}
	if r := res.Modern; r != nil && chose("blocked UDP, SDK v2 in the 2026-07-28 era", r.fallbackRun, "streamable-http", "timeout") {
		name := "blocked UDP, SDK v2 in the 2026-07-28 era"
		if r.ProtocolVersion != "2026-07-28" || !r.PerRequestStream {
			t.Errorf("%s: protocol version %q, hasPerRequestStream %v; want 2026-07-28 and the fallback's true", name, r.ProtocolVersion, r.PerRequestStream)
		}
		echoed(name, r.fallbackRun, "hi")
		if p := r.Progress; p == nil || len(p.Updates) == 0 || p.Updates[len(p.Updates)-1] != [2]float64{5, 5} {
			t.Errorf("%s: progress %+v; want notifications up to 5 of 5", name, p)
		}
		if c := r.Cancel; c == nil || c.Error == nil || !strings.Contains(*c.Error, "the user pressed Stop") {
			t.Errorf("%s: the aborted call ended with %+v; want a rejection with the abort's reason", name, c)
		} else {
			t.Logf("%s: the aborted call rejected in %d ms, after %d progress notifications", name, c.Ms, c.ProgressSeen)
		}
		if a := r.AfterCancel; a == nil || a.Text != "after" {
			t.Errorf("%s: echo after the cancel: %+v", name, a)
		}
		r.Listen.check(t, name)
		if len(r.Errors) != 0 {
			t.Errorf("%s: the SDK reported errors: %q", name, r.Errors)
		}
	}
	if r := res.Direct; r != nil && chose("SDK v2 in the 2026-07-28 era over MCP-Flow", r.fallbackRun, "mcp-flow", "forced") {
		name := "SDK v2 in the 2026-07-28 era over MCP-Flow"
		if r.ProtocolVersion != "2026-07-28" {
			t.Errorf("%s: protocol version %q", name, r.ProtocolVersion)
		}
		r.Listen.check(t, name)
		echoed(name, r.fallbackRun, "hi")
		if len(r.Errors) != 0 {
			t.Errorf("%s: the SDK reported errors: %q", name, r.Errors)
		}
	}
	if l := res.Late; l != nil {
		if l.Choice.Transport != "streamable-http" || l.Choice.Reason != "forced" || l.Cancelled == nil || l.LateSent != 1 || len(l.Errors) != 0 {
			t.Errorf("a progress update after the SDK cancelled its call (a scripted fallback, forced): %+v; want it stopped in the transport, no error from the SDK", *l)
		}
	}
	if r := res.Refused; r != nil && chose("no UDP listener", r.fallbackRun, "streamable-http", "failed") {
		// The refusal, not the 800 ms budget: 29 ms measured with the 2-core
		// machine at load 10 (2026-12-06); "failed" as the reason says the same.
		if r.Choice.Ms >= 800 {
			t.Errorf("no UDP listener: fell back after %d ms; want at once, before the budget", r.Choice.Ms)
		}
		echoed("no UDP listener", r.fallbackRun, "hi")
	}
	if r := res.Slow; r != nil && chose("UDP at 100 ms RTT", r.fallbackRun, "mcp-flow", "ready") {
		if r.Choice.Ms < 100 {
			t.Errorf("UDP at 100 ms RTT: ready in %d ms, under one round trip: is the delay in effect?", r.Choice.Ms)
		}
		if r.Encoding != "cbor" || r.ServerTransport == nil || r.ServerTransport.Type != "mcp-flow" {
			t.Errorf("UDP at 100 ms RTT: encoding %q, server transport %+v; want cbor over mcp-flow", r.Encoding, r.ServerTransport)
		}
		echoed("UDP at 100 ms RTT", r.fallbackRun, "hi")
	}
}

// spkiHash is what --ignore-certificate-errors-spki-list takes: the base64
// SHA-256 of the server's SubjectPublicKeyInfo, read from the certificate
// it presents on TCP (pinned to hash, as it printed it).
func spkiHash(t *testing.T, addr, hash string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, flowtest.PinnedTLS(t, hash))
	if err != nil {
		t.Fatalf("TLS to the server's TCP side: %v", err)
	}
	defer c.Close()
	sum := sha256.Sum256(c.ConnectionState().PeerCertificates[0].RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}
