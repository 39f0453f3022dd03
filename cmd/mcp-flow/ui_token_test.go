//go:build linux

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/oidctest"
)

// TestInspectorToken: the inspector against a server that checks access
// tokens (docs/spec.md §9.1; bearer.NewJWTVerifier, tokens from a real
// OpenID provider), in Chromium and Firefox: its own connect, with the
// token field empty, fails and the page says so; the token typed into the
// field (a password input) and Connect connect, the status saying where
// the transport put it, and whoami answers with the token's subject. The
// token is kept nowhere but the field: not in the page's URL, storage or
// cookies, nor in the console.
func TestInspectorToken(t *testing.T) {
	t.Parallel()
	jsDir, err := filepath.Abs("../../js")
	if err != nil {
		t.Fatal(err)
	}
	engines := []struct {
		name  string
		drive func(t *testing.T, page string, v any, token string)
	}{
		{"chromium", func(t *testing.T, page string, v any, token string) {
			path := browsertest.Chromium(t)
			browsertest.NPM(t, jsDir, "node_modules/puppeteer-core")
			browsertest.Drive(t, jsDir, "test/inspector-token.mjs", path, page, 60*time.Second, v, token)
		}},
		{"firefox", func(t *testing.T, page string, v any, token string) {
			path := browsertest.Firefox(t)
			browsertest.NPM(t, jsDir, "node_modules/puppeteer-core")
			browsertest.DriveFirefox(t, jsDir, "test/inspector-token.mjs", path, page, 60*time.Second, v, token)
		}},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel() // each engine has its own provider, server and UI
			p := oidctest.Start(t)
			var (
				mu     sync.Mutex
				verify bearer.Verifier
				opened atomic.Int32
			)
			srv := flowtest.Serve(t, flow.ServerConfig{
				Auth: bearer.Config{AllowQuery: true, Verifier: func(ctx context.Context, tok string, r *http.Request) (*bearer.TokenInfo, error) {
					mu.Lock()
					v := verify
					mu.Unlock()
					return v(ctx, tok, r)
				}},
				OnSession: func(*flow.Session) { opened.Add(1) },
				Logger:    flowtest.Quiet,
			})
			v, err := bearer.NewJWTVerifier(t.Context(), bearer.JWTConfig{Issuer: p.Issuer, Audience: srv.URL(), JWKS: p.JWKSURL()})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			verify = v
			mu.Unlock()
			token := p.Token(t, oidctest.TokenOptions{Audience: srv.URL(), Subject: "inspector-user", Scope: "mcp"})

			_, page, uiErr, _ := startUI(t, []string{"-url", srv.URL(), "-cert-hash", flowtest.Cert.HashHex()})
			var res struct {
				Error, WithoutToken, Connected, Whoami string
				Kept                                   struct{ Href, Storage, Cookie, FieldType string }
				Console                                []string
			}
			e.drive(t, page, &res, token)
			if res.Error != "" {
				t.Fatalf("the inspector run failed: %s\nconsole:\n%s\nmcp-flow ui:\n%s", res.Error, strings.Join(res.Console, "\n"), uiErr.String())
			}
			if !strings.Contains(res.WithoutToken, "cannot open a WebTransport session") || !strings.Contains(res.WithoutToken, "token option") {
				t.Errorf("status without a token: %q; want the failed connect, with a hint about the token", res.WithoutToken)
			}
			if !strings.HasPrefix(res.Connected, "connected to") || !strings.Contains(res.Connected, "access token in the ") {
				t.Errorf("status with the token: %q; want connected, saying where the token went", res.Connected)
			}
			if !strings.Contains(res.Whoami, `"subject": "inspector-user"`) && !strings.Contains(res.Whoami, `"subject":"inspector-user"`) {
				t.Errorf("whoami shown: %q; want subject inspector-user", res.Whoami)
			}
			if res.Kept.FieldType != "password" {
				t.Errorf("the token field is of type %q, want password", res.Kept.FieldType)
			}
			for what, s := range map[string]string{"the page's URL": res.Kept.Href, "storage": res.Kept.Storage, "cookies": res.Kept.Cookie, "the console": strings.Join(res.Console, "\n"), "mcp-flow ui's stderr": uiErr.String()} {
				if strings.Contains(s, token) {
					t.Errorf("the token is in %s", what)
				}
			}
			if n := opened.Load(); n != 1 {
				t.Errorf("the server opened %d sessions; want 1 (the connect with the token)", n)
			}
			t.Logf("%s: without a token: %s", e.name, res.WithoutToken)
			t.Logf("%s: %s; whoami: %s", e.name, res.Connected, strings.Join(strings.Fields(res.Whoami), " "))
			if t.Failed() {
				b, _ := json.MarshalIndent(res, "", " ")
				t.Logf("page: %s", b)
			}
		})
	}
}
