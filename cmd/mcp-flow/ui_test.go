//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestInspector: `mcp-flow ui` serves the inspector; headless Chromium,
// driven as a user (test/inspector.mjs of js/), connects to an MCP-Flow
// server with no -allow-origin (a loopback page on a loopback server, spec
// §9), fills in generate's form and calls it, calls slow and echo, calls a
// long slow and presses its Cancel, calls log and tone; the page shows the
// tools with their arguments, the stream's bytes and SHA-256, the progress
// bar at its end, the cancelled call ended as cancelled (its $/cancel
// answered with -32800) within 2 s, the log messages, the counters (audio
// and log datagrams among them) and the frame log in CBOR. The screenshot
// is taken then (MCP_FLOW_UPDATE_SCREENSHOT=1 writes it to
// docs/inspector.png). Ctrl-C ends `mcp-flow ui` with status 0.
func TestInspector(t *testing.T) {
	t.Parallel()
	chromium := browsertest.Chromium(t)
	jsDir, err := filepath.Abs("../../js")
	if err != nil {
		t.Fatal(err)
	}
	browsertest.NPM(t, jsDir, "node_modules/playwright-core")
	fresh, err := os.ReadFile(filepath.Join(jsDir, "dist/index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if embedded, _ := uiFiles.ReadFile("ui/mcpflow.js"); !bytes.Equal(fresh, embedded) {
		t.Fatalf("cmd/mcp-flow/ui/mcpflow.js is not the current build of js/src: run `make ui`")
	}

	base, _ := toolsServer(t, nil)
	ui, page, uiErr, stderrDone := startUI(t, base)

	const n = 3 << 20
	shot := filepath.Join(t.TempDir(), "inspector.png")
	var res struct {
		Error, Status string
		Tools, Args   []string
		Stream        struct {
			Bytes        int64
			SHA256, Text string
		}
		Calls       []struct{ Title, State, Done, Bar, Result string }
		CancelledMs *int
		Logs        []string
		Counters    map[string]string
		Frames      [][]string
		Console     []string
	}
	browsertest.Drive(t, jsDir, "test/inspector.mjs", chromium, page, 60*time.Second, &res, shot, "3145728")
	if res.Error != "" {
		t.Fatalf("the inspector run failed: %s\nconsole:\n%s\nmcp-flow ui:\n%s", res.Error, strings.Join(res.Console, "\n"), uiErr.String())
	}
	if !strings.Contains(res.Status, "connected to") || !strings.Contains(res.Status, "encoding cbor") {
		t.Errorf("status %q", res.Status)
	}
	for _, tool := range []string{"echo", "generate", "slow", "ask_sampling"} {
		if !strings.Contains(strings.Join(res.Tools, " "), tool) {
			t.Errorf("tool %s not listed: %v", tool, res.Tools)
		}
	}
	if strings.Join(res.Args, " ") != "bytes* sha256 streams" {
		t.Errorf("generate's argument form: %q, want bytes (required), sha256, streams", res.Args)
	}
	// The size comes from generate's progress in bytes (spec §6.3).
	if res.Stream.Bytes != n || res.Stream.SHA256 != demotools.GenerateSHA256(n) || !strings.Contains(res.Stream.Text, "3.0 MiB at ") || !strings.Contains(res.Stream.Text, "3.0 MiB of 3.0 MiB (100%)") {
		t.Errorf("stream shown: %+v, want %d bytes, SHA-256 %s, a rate and the share of the size generate told", res.Stream, n, demotools.GenerateSHA256(n))
	}
	// The calls, newest first: tone, log, the cancelled slow, echo, slow, generate.
	call := func(prefix string) (c struct{ Title, State, Done, Bar, Result string }) {
		for _, c := range res.Calls {
			if strings.HasPrefix(c.Title, prefix) {
				return c
			}
		}
		return c
	}
	if len(res.Calls) != 6 || call(`slow {"steps":8`).Bar != "100%" || !strings.Contains(call("echo ").Result, "hello from the inspector") ||
		call("log ").Done != "ok" || !strings.Contains(call("tone ").Result, demotools.ToneFormat) {
		t.Errorf("calls shown: %+v", res.Calls)
	}
	if c := call(`slow {"steps":2000`); c.Done != "cancelled" || !strings.HasPrefix(c.State, "cancelled: ") || res.CancelledMs == nil || *res.CancelledMs > 2000 {
		t.Errorf("the cancelled call: %+v, %v ms after Cancel; want it shown as cancelled within 2 s", c, res.CancelledMs)
	}
	if len(res.Logs) == 0 || !strings.Contains(res.Logs[0], "warning "+demotools.LogLogger) || !strings.Contains(res.Logs[0], "disk 91% full") {
		t.Errorf("log list: %q; want log's warnings", res.Logs)
	}
	if res.Counters["encoding"] != "cbor" || res.Counters["datagrams received"] == "0" || res.Counters["execution streams"] != "1" ||
		res.Counters["audio datagrams"] == "0" || res.Counters["log datagrams"] == "0" {
		t.Errorf("counters: %v (want cbor, datagrams from slow's progress, one stream, audio and log datagrams)", res.Counters)
	}
	cbor := 0
	for _, f := range res.Frames {
		if len(f) == 4 && f[1] == "cbor" {
			cbor++
		}
	}
	if cbor < 6 {
		t.Errorf("frame log: %d CBOR frames of %d: %v", cbor, len(res.Frames), res.Frames)
	}
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 20000 {
		t.Errorf("screenshot: %d bytes, %v", len(png), err)
	} else if os.Getenv("MCP_FLOW_UPDATE_SCREENSHOT") == "1" {
		if err := os.WriteFile("../../docs/inspector.png", png, 0o644); err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		b, _ := json.MarshalIndent(res, "", " ")
		t.Logf("page: %s\nmcp-flow ui:\n%s", b, uiErr.String())
	}

	syscall.Kill(ui.Process.Pid, syscall.SIGINT)
	<-stderrDone
	if code := exitCode(t, ui, uiErr); code != exitOK {
		t.Errorf("mcp-flow ui after Ctrl-C: exit %d\n%s", code, uiErr.String())
	}
}

// startUI runs `mcp-flow ui` with base (the server flags) on a free
// loopback port, killed with the test; it returns the command, the
// inspector's URL, its stderr, and a channel closed when stderr ends.
func startUI(t *testing.T, base []string) (ui *exec.Cmd, page string, uiErr *flowtest.SyncBuffer, stderrDone <-chan struct{}) {
	t.Helper()
	ui = exec.Command(cli(t), append(base[:len(base):len(base)], "ui", "-listen", "127.0.0.1:0")...)
	errPipe, err := ui.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ui.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ui.Process.Kill(); ui.Wait() })
	uiErr = &flowtest.SyncBuffer{}
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(errPipe)
		re := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/)`)
		for sc.Scan() {
			uiErr.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		close(addr)
	}()
	page, ok := <-addr
	if !ok {
		<-done
		t.Fatalf("mcp-flow ui printed no address:\n%s", uiErr.String())
	}
	return ui, page, uiErr, done
}
