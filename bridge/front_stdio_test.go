// Over 400 lines: the stdio front's end-to-end tests through the mcp-flow
// binary, with the rig the other test files share (buildCLI, buildBinary,
// bridgeCmd, ndjsonHost); split by case, the rig would be scattered.

package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/gobuild"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func buildCLI(t *testing.T) string {
	return buildBinary(t, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
}

// buildBinary builds the command pkg once for this test binary (gobuild;
// TestMain removes it).
func buildBinary(t *testing.T, pkg string) string {
	t.Helper()
	out, err := gobuild.Build(pkg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func bridgeCmd(cli string, srv *flow.Server, extra ...string) *exec.Cmd {
	args := append([]string{"-url", srv.URL(), "-cert-hash", flowtest.Cert.HashHex()}, extra...)
	cmd := exec.Command(cli, append(args, "bridge", "stdio")...)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestGoSDKClientThroughStdioFront: the official Go SDK's client spawns the
// bridge as a stdio server and uses a remote MCP-Flow server through it.
func TestGoSDKClientThroughStdioFront(t *testing.T) {
	t.Parallel()
	cli := buildCLI(t)
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	progress := newProgressCount(4)
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-host", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.add() },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	cmd := bridgeCmd(cli, srv, "-inline-limit", strconv.Itoa(4<<20))
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 5 {
		t.Fatalf("tools/list: %v, %d tools", err, len(tools.Tools))
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]string{"text": "こんにちは"}})
	if err != nil || r.Content[0].(*mcp.TextContent).Text != "こんにちは" {
		t.Fatalf("echo: %v %+v", err, r)
	}
	// A 3 MiB execution stream arrives inline, byte for byte.
	const n = 3 << 20
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "generate", Arguments: map[string]any{"bytes": n}})
	if err != nil {
		t.Fatal(err)
	}
	er, ok := r.Content[0].(*mcp.EmbeddedResource)
	if !ok {
		t.Fatalf("generate returned %T", r.Content[0])
	}
	sum := sha256.Sum256(er.Resource.Blob)
	if len(er.Resource.Blob) != n || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(n) {
		t.Fatalf("inline blob of %d bytes, sha mismatch", len(er.Resource.Blob))
	}
	// Past the inline limit: a resource_link to a complete file.
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "generate", Arguments: map[string]any{"bytes": 5 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	rl, ok := r.Content[0].(*mcp.ResourceLink)
	if !ok || rl.Size == nil || *rl.Size != 5<<20 {
		t.Fatalf("large result: %T %+v", r.Content[0], r.Content[0])
	}
	b, err := os.ReadFile(strings.TrimPrefix(rl.URI, "file://"))
	if sum := sha256.Sum256(b); err != nil || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(5<<20) {
		t.Fatalf("linked file: %v", err)
	}
	// A stream that fails midway fails the call: never a truncated payload.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail_midstream", Arguments: map[string]any{"bytes": 100000}}); err == nil {
		t.Fatal("a failed stream was passed on as a result")
	}
	// Progress crosses as MCP notifications.
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]int{"steps": 4, "delayMs": 5}}
	params.SetProgressToken("host-token")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	progress.wait(t, "slow, 4 steps, through the stdio front")
	t0 := time.Now()
	defer func() { t.Logf("close took %v", time.Since(t0)) }()
	if err := cs.Close(); err != nil {
		t.Fatalf("close (the bridge must exit 0 on EOF): %v", err)
	}
}

// TestContentLengthFraming: a host speaking Content-Length framing gets its
// answers in the same framing, lengths in UTF-8 bytes; EOF ends the bridge
// with exit 0.
func TestContentLengthFraming(t *testing.T) {
	t.Parallel()
	cli := buildCLI(t)
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	cmd := bridgeCmd(cli, srv)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	frame := func(s string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(s), s) }
	io.WriteString(stdin, frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"クライアント","version":"1"}}}`))
	io.WriteString(stdin, frame(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	io.WriteString(stdin, frame(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"日本語のテキスト"}}}`))
	br := bufio.NewReader(stdout)
	read := func() string {
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "Content-Length: ") {
			t.Fatalf("header %q, %v", line, err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "Content-Length: ")))
		if blank, _ := br.ReadString('\n'); blank != "\r\n" {
			t.Fatalf("no blank line after the header: %q", blank)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	if init := read(); !strings.Contains(init, `"serverInfo"`) || strings.Contains(init, `"transport"`) {
		t.Fatalf("initialize result %s", init)
	}
	if echo := read(); !strings.Contains(echo, `"text":"日本語のテキスト"`) || !strings.Contains(echo, `"id":2`) {
		t.Fatalf("echo %s", echo)
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("bridge exit after EOF: %v", err)
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatal("bridge did not exit after EOF")
	}
	if rest, _ := io.ReadAll(br); len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("stdout after the replies: %q", rest)
	}
}

// ndjsonHost drives the stdio front as a host speaking NDJSON, writing every
// message a few bytes at a time so that messages arrive split across reads.
type ndjsonHost struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startNDJSONHost(t *testing.T, cli string, srv *flow.Server) *ndjsonHost {
	return startNDJSONHostCmd(t, bridgeCmd(cli, srv))
}

// startNDJSONHostCmd starts cmd, a stdio front, as an NDJSON host would.
func startNDJSONHostCmd(t *testing.T, cmd *exec.Cmd) *ndjsonHost {
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &ndjsonHost{t: t, cmd: cmd, in: in, out: bufio.NewReader(out)}
}

func (h *ndjsonHost) send(msg string) {
	b := []byte(msg + "\n")
	for len(b) > 0 { // 7 bytes at a time: splits lines and UTF-8 sequences
		n := min(7, len(b))
		if _, err := h.in.Write(b[:n]); err != nil {
			h.t.Fatal(err)
		}
		b = b[n:]
		// Pacing only, so that the bridge's reads are likely to end
		// mid-line: the test does not depend on it (if the writes
		// coalesce, the lines still arrive whole and in order).
		time.Sleep(100 * time.Microsecond)
	}
}

func (h *ndjsonHost) read() string {
	h.t.Helper()
	line, err := h.out.ReadString('\n')
	if err != nil {
		h.t.Fatalf("read: %v", err)
	}
	return strings.TrimSuffix(line, "\n")
}

func (h *ndjsonHost) initialize(version string) {
	h.t.Helper()
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"ホスト","version":"1"}}}`)
	if r := h.read(); !strings.Contains(r, `"protocolVersion":"`+version+`"`) {
		h.t.Fatalf("initialize: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// exit closes the host's end and requires the bridge to exit 0 having
// written nothing more.
func (h *ndjsonHost) exit() {
	h.t.Helper()
	h.in.Close()
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			h.t.Fatalf("bridge exit after EOF: %v", err)
		}
	case <-time.After(15 * time.Second):
		h.t.Fatal("bridge did not exit after EOF")
	}
	if rest, _ := io.ReadAll(h.out); len(rest) != 0 {
		h.t.Fatalf("stdout after the replies: %q", rest)
	}
}

// TestStdioFrontBatchesByVersion: in an MCP 2025-03-26 session a batch gets
// one array of responses (notifications unanswered); in a 2025-11-25
// session, and before initialize, a batch is refused whole with one -32600
// error, and the session goes on. Messages arrive split across reads, with
// Japanese text; EOF ends the bridge with exit 0.
func TestStdioFrontBatchesByVersion(t *testing.T) {
	t.Parallel()
	cli := buildCLI(t)
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	batch := `[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"一つ目"}}},` +
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},` +
		`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"echo","arguments":{"text":"二つ目"}}},` +
		`{"jsonrpc":"2.0","id":"c","method":"no/such/method"}]`

	old := startNDJSONHost(t, cli, srv)
	old.initialize("2025-03-26")
	old.send(batch)
	var got []struct {
		ID     string          `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	line := old.read()
	if err := json.Unmarshal([]byte(line), &got); err != nil || len(got) != 3 {
		t.Fatalf("batch answer %s: %v", line, err)
	}
	byID := map[string]string{}
	for _, r := range got {
		if r.Error != nil {
			byID[r.ID] = fmt.Sprint(r.Error.Code)
		} else {
			byID[r.ID] = string(r.Result)
		}
	}
	if !strings.Contains(byID["a"], "一つ目") || !strings.Contains(byID["b"], "二つ目") || byID["c"] != "-32601" {
		t.Fatalf("batch answers %v", byID)
	}
	old.exit()

	cur := startNDJSONHost(t, cli, srv)
	cur.send(batch) // before initialize
	if r := cur.read(); !strings.Contains(r, `"id":null`) || !strings.Contains(r, `-32600`) || !strings.Contains(r, "before initialize") {
		t.Fatalf("batch before initialize: %s", r)
	}
	cur.initialize("2025-11-25")
	cur.send(batch)
	if r := cur.read(); !strings.Contains(r, `"id":null`) || !strings.Contains(r, `-32600`) || !strings.Contains(r, "2025-11-25") {
		t.Fatalf("batch in 2025-11-25: %s", r)
	}
	cur.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"まだ大丈夫"}}}`)
	if r := cur.read(); !strings.Contains(r, "まだ大丈夫") || !strings.Contains(r, `"id":9`) {
		t.Fatalf("after the refused batch: %s", r)
	}
	cur.exit()
}

// TestStdioFrontDebugLogs: debug logs go to stderr with MCP_FLOW_DEBUG=1 or
// -debug, the flag wins over the variable, and stdout carries protocol
// messages only. Without debug, stderr carries one line: the transport the
// front chose and why (spec §10.2).
func TestStdioFrontDebugLogs(t *testing.T) {
	t.Parallel()
	cli := buildCLI(t)
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	input := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	run := func(env string, flags ...string) (stdout, stderr string) {
		args := append([]string{"-url", srv.URL(), "-cert-hash", flowtest.Cert.HashHex()}, flags...)
		cmd := exec.Command(cli, append(args, "bridge", "stdio")...)
		cmd.Env = append(os.Environ(), "MCP_FLOW_DEBUG="+env)
		cmd.Stdin = strings.NewReader(input)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("bridge: %v\n%s", err, e.String())
		}
		for _, line := range strings.Split(strings.TrimSpace(o.String()), "\n") {
			if !json.Valid([]byte(line)) {
				t.Fatalf("stdout line is no JSON-RPC message: %q", line)
			}
		}
		return o.String(), e.String()
	}
	// quiet is stderr less the one line that names the transport.
	quiet := func(errs string) string {
		line, rest, _ := strings.Cut(errs, "\n")
		if !strings.HasPrefix(line, "mcp-flow: bridge stdio: mcp-flow (QUIC answered in ") {
			return errs
		}
		return rest
	}
	if out, errs := run("1"); !strings.Contains(errs, `msg="from host" method=ping`) || strings.Count(out, "\n") != 2 {
		t.Errorf("MCP_FLOW_DEBUG=1: stderr %q, stdout %q", errs, out)
	}
	if _, errs := run("1", "-debug=false"); quiet(errs) != "" {
		t.Errorf("-debug=false must win over MCP_FLOW_DEBUG=1: stderr %q", errs)
	}
	if _, errs := run("", "-debug"); !strings.Contains(errs, "level=DEBUG") {
		t.Errorf("-debug: stderr %q", errs)
	}
	if _, errs := run(""); quiet(errs) != "" || errs == "" {
		t.Errorf("quiet by default but for the transport's line: stderr %q", errs)
	}
}

// TestBridgeCommandLine: the bridges take their flags after the mode and
// the server URL last, as in `mcp-flow bridge stdio URL` and
// `mcp-flow bridge http -listen 127.0.0.1:PORT URL`.
func TestBridgeCommandLine(t *testing.T) {
	t.Parallel()
	cli := buildCLI(t)
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	cmd := exec.Command(cli, "bridge", "stdio", "-cert-hash", flowtest.Cert.HashHex(), srv.URL())
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), `"id":1,"result":{}`) {
		t.Fatalf("bridge stdio URL: %v\n%s", err, out)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	h := exec.Command(cli, "bridge", "http", "-listen", addr, "-cert-hash", flowtest.Cert.HashHex(), srv.URL())
	var stderr flowtest.SyncBuffer
	h.Stderr = &stderr
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- h.Wait() }()
	t.Cleanup(func() { h.Process.Kill(); <-exited })
	// The command prints its endpoint on stderr before it listens, so that
	// line is no sign that it listens: poll the port, bounded, and fail at
	// once if the process exits.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("bridge http exited (%v) before it listened on %s; stderr:\n%s", err, addr, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("bridge http does not listen on %s after 10 s; stderr:\n%s", addr, stderr.String())
		}
	}
	resp, body := send(t, "http://"+addr+"/mcp", "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("MCP-Session-Id") == "" || !strings.Contains(body, `"serverInfo"`) {
		t.Fatalf("bridge http: %d %s", resp.StatusCode, body)
	}
	if out, err := exec.Command(cli, "bridge", "stdio", "a", "b").CombinedOutput(); err == nil || !strings.Contains(string(out), "at most one server URL") {
		t.Fatalf("two URLs: %v %s", err, out)
	}
}
