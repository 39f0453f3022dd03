package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/oidctest"
)

// bridgeServerAudience is the resource identifier of the server these
// tests run with -auth-*.
const bridgeServerAudience = "https://mcp-flow.test/mcp-flow"

// startAuthBridge runs the built CLI with args, its stderr kept; it returns
// once the bridge http endpoint is announced (announce) or at once.
func startAuthBridge(t *testing.T, cli string, announce bool, args ...string) (cmd *exec.Cmd, endpoint string, stderr *flowtest.SyncBuffer, stdin io.WriteCloser, stdout *bufio.Reader) {
	t.Helper()
	cmd = exec.Command(cli, args...)
	stderr = &flowtest.SyncBuffer{}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
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
	exited := make(chan struct{})
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		<-exited
	})
	announced := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			stderr.Write([]byte(line + "\n"))
			if _, rest, ok := strings.Cut(line, "endpoint http://"); ok {
				announced <- "http://" + strings.Fields(rest)[0]
			}
		}
		cmd.Wait()
	}()
	if announce {
		select {
		case endpoint = <-announced:
		case <-exited:
			t.Fatalf("the bridge exited before listening; stderr:\n%s", stderr)
		case <-time.After(30 * time.Second):
			t.Fatalf("the bridge announced no endpoint in 30 s; stderr:\n%s", stderr)
		}
	}
	return cmd, endpoint, stderr, in, bufio.NewReader(out)
}

// tokenFile writes tok to a new file and returns its path.
func tokenFile(t *testing.T, tok string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestBridgeHTTPAuthFlags: `mcp-flow bridge http -auth-issuer … -token-file
// F` in front of a server of another audience: its clients need tokens for
// the front's own endpoint (401 naming its metadata, which it serves), and
// the server's tools see the bridge's own credential (whoami).
func TestBridgeHTTPAuthFlags(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	dir := t.TempDir()
	srvBin := build(t, dir, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server")
	cli := build(t, dir, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
	url, hash := flowtest.ServerProcess(t, srvBin, "-auth-issuer", p.Issuer, "-auth-audience", bridgeServerAudience, "-auth-scopes", "mcp")
	own := tokenFile(t, p.Token(t, oidctest.TokenOptions{Audience: bridgeServerAudience, Scope: "mcp", Subject: "the-bridge"}))
	_, endpoint, stderr, _, _ := startAuthBridge(t, cli, true, "-cert-hash", hash, "bridge", "http", "-listen", "127.0.0.1:0",
		"-auth-issuer", p.Issuer, "-auth-scopes", "front", "-token-file", own, url)

	post := func(tok, sid, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", endpoint, strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if sid != "" {
			req.Header.Set("MCP-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST: %v; bridge stderr:\n%s", err, stderr)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	meta := bearer.MetadataURL(endpoint)
	if r, _ := post("", "", initialize); r.StatusCode != 401 || r.Header.Get("WWW-Authenticate") != `Bearer resource_metadata="`+meta+`"` {
		t.Fatalf("no token: %d, WWW-Authenticate %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}
	mr, err := http.Get(meta)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.NewDecoder(mr.Body).Decode(&doc); err != nil || doc.Resource != endpoint || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != p.Issuer {
		t.Fatalf("metadata at %s: %v %+v", meta, err, doc)
	}
	mr.Body.Close()

	alice := p.Token(t, oidctest.TokenOptions{Audience: endpoint, Scope: "front", Subject: "alice"})
	r, body := post(alice, "", initialize)
	sid := r.Header.Get("MCP-Session-Id")
	if r.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize with alice's token: %d %s; bridge stderr:\n%s", r.StatusCode, body, stderr)
	}
	if r, body = post(alice, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`); r.StatusCode != 200 || !strings.Contains(body, `\"subject\":\"the-bridge\"`) && !strings.Contains(body, `"subject":"the-bridge"`) {
		t.Fatalf("whoami through the bridge: %d %s", r.StatusCode, body)
	}
	if strings.Contains(stderr.String(), alice) {
		t.Fatal("the client's token is in the bridge's log")
	}
}

// TestBridgeStdioTokenFile: `mcp-flow bridge stdio -token-file F` dials
// with the file's token (whoami); a token file that cannot be read, and
// bridge http's own flags on bridge stdio, are usage errors (exit 2).
func TestBridgeStdioTokenFile(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	dir := t.TempDir()
	srvBin := build(t, dir, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server")
	cli := build(t, dir, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow")
	url, hash := flowtest.ServerProcess(t, srvBin, "-auth-issuer", p.Issuer, "-auth-audience", bridgeServerAudience, "-auth-scopes", "mcp")
	f := tokenFile(t, p.Token(t, oidctest.TokenOptions{Audience: bridgeServerAudience, Scope: "mcp", Subject: "carol"}))
	_, _, stderr, in, out := startAuthBridge(t, cli, false, "-cert-hash", hash, "-transport", "mcp-flow", "bridge", "stdio", "-token-file", f, url)
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`,
	} {
		if _, err := io.WriteString(in, m+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	lines := make(chan string, 4)
	go func() {
		for {
			l, err := out.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- l
		}
	}()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the bridge's stdout ended; stderr:\n%s", stderr)
			}
			if strings.Contains(l, `"id":1`) {
				if !strings.Contains(l, `"subject":"carol"`) && !strings.Contains(l, `\"subject\":\"carol\"`) {
					t.Fatalf("whoami through bridge stdio: %s", l)
				}
				goto usage
			}
		case <-timeout:
			t.Fatalf("no whoami answer in 30 s; stderr:\n%s", stderr)
		}
	}
usage:
	for _, args := range [][]string{
		{"bridge", "stdio", "-token-file", filepath.Join(dir, "missing"), url},
		{"bridge", "stdio", "-auth-issuer", p.Issuer, url},
		{"bridge", "http", "-listen", "127.0.0.1:0", "-pass-token", url},
		{"bridge", "http", "-listen", "127.0.0.1:0", "-auth-issuer", p.Issuer, "-pass-token", "-token-file", f, url},
	} {
		var errb strings.Builder
		if code := run(args, io.Discard, &errb); code != exitUsage {
			t.Errorf("%v: exit %d, want %d; stderr:\n%s", args, code, exitUsage, errb.String())
		}
	}
}
