package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/bridge/sdkflow"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tsv2Script is the TypeScript SDK v2 server of these tests.
func tsv2Script(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("tsv2/server.mjs")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tsv2HTTP starts tsv2/server.mjs over Streamable HTTP in era and returns
// its endpoint. It ends (end of input, then the process is reaped) with the
// test.
func tsv2HTTP(t *testing.T, node, era string) string {
	t.Helper()
	cmd := exec.Command(node, tsv2Script(t), "http", era)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &flowtest.SyncBuffer{}
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("tsv2 server (http %s): %v; stderr:\n%s", era, err, stderr)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("tsv2 server (http %s) did not announce its URL: %q %v; stderr:\n%s", era, line, err, stderr)
	}
	return url
}

// upstreamServer serves up over MCP-Flow; when the test ends, the server
// closes and every upstream connection (process) must be gone.
func upstreamFlow(t *testing.T, up *bridge.Upstream) *flow.Server {
	t.Helper()
	t.Cleanup(func() { // after the server's own cleanup (LIFO)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := up.Wait(ctx); err != nil {
			t.Errorf("upstream connections still open after the server closed: %v", err)
		}
	})
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	up.Configure(&cfg)
	return flowtest.Serve(t, cfg)
}

func dialVersion(t *testing.T, srv *flow.Server, version string) *flow.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet,
		ProtocolVersion: version, Capabilities: json.RawMessage(`{"sampling":{},"elicitation":{"form":{}}}`)})
	if err != nil {
		t.Fatalf("dial (%s): %v", version, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// toolResult is the part of a tools/call result these tests read.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError    bool   `json:"isError"`
	ResultType string `json:"resultType"`
}

func callTool(ctx context.Context, s *flow.Session, name string, args any, opts ...flow.CallOption) (*flow.Response, toolResult, error) {
	var res toolResult
	r, err := s.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": args}, opts...)
	if err == nil {
		err = json.Unmarshal(r.Result, &res)
	}
	return r, res, err
}

func textOf(res toolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	return res.Content[0].Text
}

// serverName is the upstream's name as the MCP-Flow client sees it: from
// server/discover (2026-07-28) or initialize (2025).
func serverName(t *testing.T, ctx context.Context, s *flow.Session, version string) string {
	t.Helper()
	if version != protocol.MCP20260728 {
		return s.InitializeResult().ServerInfo.Name
	}
	// Without server-request capabilities (the session's own, sampling and
	// elicitation, are replaced by the request's _meta): a 2025-only
	// upstream refuses to claim 2026-07-28 to a client that takes server
	// requests (eraErrors checks that).
	r, err := s.Call(ctx, protocol.MethodDiscover, map[string]any{"_meta": map[string]any{protocol.MetaClientCapabilities: map[string]any{}}})
	if err != nil {
		t.Fatalf("server/discover: %v", err)
	}
	var d struct {
		SupportedVersions []string `json:"supportedVersions"`
		Meta              map[string]struct {
			Name string `json:"name"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(r.Result, &d); err != nil || !slices.Contains(d.SupportedVersions, protocol.MCP20260728) {
		t.Fatalf("server/discover result %s: %v", r.Result, err)
	}
	return d.Meta[protocol.MetaServerInfo].Name
}

// exercise runs the common checks of one row and returns how many passed:
// the upstream's identity, echo, a 1 MiB text on an execution stream,
// progress, a tool error, and a cancellation that reaches the upstream.
func exercise(t *testing.T, s *flow.Session, version, wantName string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if got := serverName(t, ctx, s, version); got != wantName {
		t.Fatalf("upstream name %q, want %q", got, wantName)
	}
	const hello = "héllo, 上流"
	if _, res, err := callTool(ctx, s, "echo", map[string]string{"text": hello}); err != nil || textOf(res) != hello {
		t.Fatalf("echo: %q %v", textOf(res), err)
	}
	const size = 1 << 20
	r, _, err := callTool(ctx, s, "big", map[string]int{"size": size})
	if err != nil || len(r.Refs) != 1 {
		t.Fatalf("big: %v, %d refs (want the 1 MiB text on an execution stream)", err, len(r.Refs))
	}
	sr, err := r.Stream(ctx, r.Refs[0].StreamTag)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(sr)
	if err != nil || len(b) != size || strings.Trim(string(b), "x") != "" {
		t.Fatalf("big: stream of %d bytes, %v", len(b), err)
	}
	var updates []flow.Progress
	got := make(chan struct{}, 16)
	_, res, err := callTool(ctx, s, "progress", map[string]int{"steps": 3}, flow.WithProgress(func(p flow.Progress) {
		updates = append(updates, p)
		got <- struct{}{}
	}))
	if err != nil || textOf(res) != "done 3" || len(updates) == 0 || updates[len(updates)-1].Progress > 3 {
		t.Fatalf("progress: %q %v, updates %+v", textOf(res), err, updates)
	}
	if _, res, err := callTool(ctx, s, "fail", map[string]any{}); err != nil || !res.IsError || !strings.Contains(textOf(res), "failing on purpose") {
		t.Fatalf("fail: %+v %v", res, err)
	}
	// Cancellation: slow reports progress once it runs; the call is then
	// cancelled ($/cancel), and the upstream must see it (its counter).
	_, before, err := callTool(ctx, s, "stats", map[string]any{})
	var n struct{ Cancelled int }
	if err != nil || json.Unmarshal([]byte(textOf(before)), &n) != nil {
		t.Fatalf("stats: %+v %v", before, err)
	}
	sctx, scancel := context.WithCancel(ctx)
	_, _, err = callTool(sctx, s, "slow", map[string]any{}, flow.WithProgress(func(flow.Progress) { scancel() }))
	scancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("slow: %v, want context.Canceled", err)
	}
	_, after, err := callTool(ctx, s, "stats", map[string]int{"atLeast": n.Cancelled + 1})
	var m struct{ Cancelled int }
	if err != nil || json.Unmarshal([]byte(textOf(after)), &m) != nil || m.Cancelled != n.Cancelled+1 {
		t.Fatalf("the upstream did not see the cancellation: %d cancellations before, %+v after (%v)", n.Cancelled, after, err)
	}
	return 6
}

// TestOfficialConformanceTSv2Upstream: MCP-Flow clients of both eras
// (2026-07-28 and 2025-11-25) through mcp-flow-server's upstream to the
// official TypeScript SDK v2 server in each of its eras (2026-07-28 only,
// 2025 only, both), over stdio and Streamable HTTP (spec §10, "Eras").
// Each row runs the same checks (exercise) as the others; where the eras
// differ the upstream translates, and what cannot be translated gets the
// error spec §10 names.
func TestOfficialConformanceTSv2Upstream(t *testing.T) {
	t.Parallel()
	node, _ := npmPeers(t)
	script := tsv2Script(t)
	for _, transport := range []string{"stdio", "http"} {
		for _, era := range []string{"modern", "legacy", "both"} {
			t.Run(transport+"/"+era, func(t *testing.T) {
				// The probe's wait covers node's start and the SDK's load
				// (the stdio server answers its first message once both are
				// done): with two suites side by side one took past the
				// 5 s default, and the upstream, taking the silence for a
				// 2025 server, initialized in 2025 (the row's ask check then
				// failed as against one). A 2025-only server refuses the
				// probe at once, so the longer wait costs no row anything.
				const probe = 60 * time.Second
				var up *bridge.Upstream
				if transport == "stdio" {
					up = bridge.NewStdioUpstream(bridge.StdioUpstreamConfig{Command: []string{node, script, "stdio", era}, Logger: flowtest.Quiet, ProbeTimeout: probe})
				} else {
					up = bridge.NewHTTPUpstream(bridge.HTTPUpstreamConfig{Endpoint: tsv2HTTP(t, node, era), Logger: flowtest.Quiet, ProbeTimeout: probe})
				}
				srv := upstreamFlow(t, up)
				for _, version := range []string{protocol.MCP20260728, protocol.MCP20251125} {
					t.Run("client-"+version, func(t *testing.T) {
						s := dialVersion(t, srv, version)
						n := exercise(t, s, version, "tsv2-server")
						n += eraErrors(t, s, transport, version, era)
						t.Logf("TSv2 upstream %s, server %s, MCP-Flow client %s: %d checks passed", transport, era, version, n)
					})
				}
			})
		}
	}
}

// eraErrors checks what crosses eras or cannot: a 2026-07-28 multi
// round-trip result (ask) reaches a 2026 client as it is and a 2025 client
// as the error of spec §10; a 2025 server's sampling request reaches a 2025
// client and is refused for a 2026 client (the tool then fails).
func eraErrors(t *testing.T, s *flow.Session, transport, version, era string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	checks := 0
	// The upstream serves a 2026 client in 2026 unless it is legacy-only,
	// and a 2025 client in 2025 unless it is modern-only.
	upModern := era == "modern" || (era == "both" && version == protocol.MCP20260728)
	_, res, err := callTool(ctx, s, "ask", map[string]any{})
	switch {
	case upModern && version == protocol.MCP20260728:
		if err != nil || res.ResultType != "input_required" {
			t.Fatalf("ask (2026 client, 2026 upstream): %+v %v, want the input_required result", res, err)
		}
	case upModern:
		var je *jsonrpc.Error
		if !errors.As(err, &je) || !strings.Contains(je.Message, "input_required") {
			t.Fatalf("ask (2025 client, 2026 upstream): %+v %v, want the error naming input_required", res, err)
		}
	default:
		if err != nil {
			t.Fatalf("ask (2025 upstream): %v", err)
		}
	}
	checks++
	if version == protocol.MCP20260728 && !upModern {
		// This client declares sampling and elicitation, which a 2025-only
		// upstream may ask for and a 2026-07-28 session cannot carry: its
		// server/discover gets UnsupportedProtocolVersionError naming the
		// 2025 revisions only, so that a dual-era client falls back to
		// initialize (spec §10, "Eras").
		_, err := s.Call(ctx, protocol.MethodDiscover, map[string]any{})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != protocol.CodeUnsupportedProtocolVersion || strings.Contains(string(je.Data), protocol.MCP20260728+`"]`) ||
			!strings.Contains(string(je.Data), protocol.MCP20251125) {
			t.Fatalf("server/discover from a client with sampling to a 2025 upstream: %v, want -32022 naming only the 2025 revisions", err)
		}
		checks++
	}
	// The SDK's HTTP entry serves 2025 statelessly (legacy 'stateless'): a
	// server request has no session to come back to, so only its other
	// modes are asked for sampling.
	if !upModern && (transport == "stdio" || era == "legacy") {
		// A 2025 upstream asks the client for sampling: a 2025 client
		// answers (its flow client has no handler: -32601 from the client),
		// a 2026 client is never asked (the bridge refuses, naming 2026).
		_, res, err := callTool(ctx, s, "sample", map[string]any{})
		if err != nil || !res.IsError {
			t.Fatalf("sample: %+v %v, want a tool error", res, err)
		}
		if version == protocol.MCP20260728 && !strings.Contains(textOf(res), "2026-07-28") {
			t.Fatalf("sample (2026 client): %q, want the bridge's refusal naming 2026-07-28", textOf(res))
		}
		checks++
	}
	return checks
}

// TestOfficialConformanceTSv2UpstreamGoSDK: a 2026-07-28 MCP-Flow client to
// the go-sdk fixture held to 2025 (-upstream-protocol 2025: initialize in
// the bridge's own name, server/discover answered from its result);
// and the go-sdk v1.8 client, which probes server/discover first, over its
// MCP-Flow transport (package sdkflow) and the upstream to the 2026-only
// TypeScript server.
func TestOfficialConformanceTSv2UpstreamGoSDK(t *testing.T) {
	t.Parallel()
	t.Run("client-2026-07-28/go-sdk-fixture-2025", func(t *testing.T) {
		fixture := goBuild(t, "github.com/mcp-flow/mcp-flow/bench/sdkfixture/cmd/sdk-fixture")
		srv := upstreamFlow(t, bridge.NewStdioUpstream(bridge.StdioUpstreamConfig{Command: []string{fixture},
			Protocol: bridge.UpstreamLegacy, Logger: flowtest.Quiet}))
		s := dialVersion(t, srv, protocol.MCP20260728)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if got := serverName(t, ctx, s, protocol.MCP20260728); got != "sdk-fixture" {
			t.Fatalf("server/discover serverInfo %q, want sdk-fixture (from its initialize)", got)
		}
		if _, res, err := callTool(ctx, s, "echo", map[string]string{"text": "über"}); err != nil || textOf(res) != "über" || res.ResultType != "complete" {
			t.Fatalf("echo: %+v %v", res, err)
		}
		r, err := s.Call(ctx, "tools/call", map[string]any{"name": "blob", "arguments": map[string]int64{"bytes": 1 << 20}})
		if err != nil || len(r.Refs) != 1 {
			t.Fatalf("blob: %v", err)
		}
		t.Logf("TSv2 upstream row: 2026-07-28 MCP-Flow client → go-sdk fixture held to 2025: 3 checks passed")
	})
	t.Run("go-sdk-client/tsv2-modern", func(t *testing.T) {
		node, _ := npmPeers(t)
		srv := upstreamFlow(t, bridge.NewStdioUpstream(bridge.StdioUpstreamConfig{Command: []string{node, tsv2Script(t), "stdio", "modern"}, Logger: flowtest.Quiet}))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-client", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &sdkflow.ClientTransport{URL: srv.URL(), Client: flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet}, Logger: flowtest.Quiet}, nil)
		if err != nil {
			t.Fatalf("go-sdk client: %v", err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]string{"text": "probe"}})
		if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "probe" {
			t.Fatalf("echo: %+v %v", res, err)
		}
		ir := cs.InitializeResult()
		if ir == nil || ir.ServerInfo == nil || ir.ServerInfo.Name != "tsv2-server" {
			t.Fatalf("go-sdk client's view of the server: %+v", ir)
		}
		t.Logf("TSv2 upstream row: go-sdk v1.8 client (server/discover probe, then %s) → sdkflow transport → 2026-only TS server: 2 checks passed", ir.ProtocolVersion)
	})
}
