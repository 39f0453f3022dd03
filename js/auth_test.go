package js

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/oidctest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// driveFunc loads pageURL in one engine and decodes its window.__result
// into v.
type driveFunc func(t *testing.T, pageURL string, timeout time.Duration, v any)

// eachEngine runs fn in a subtest per browser engine: Chromium (Debian's
// chromium, driven by playwright-core), Chromium with its experimental web
// platform features, and Firefox (Debian's firefox-esr, driven by
// puppeteer-core over WebDriver BiDi).
func eachEngine(t *testing.T, fn func(t *testing.T, drive driveFunc)) {
	t.Run("chromium", func(t *testing.T) {
		path := browsertest.Chromium(t)
		browsertest.NPM(t, ".", "node_modules/playwright-core")
		fn(t, func(t *testing.T, pageURL string, timeout time.Duration, v any) {
			browsertest.Drive(t, ".", "test/run.mjs", path, pageURL, timeout, v)
		})
	})
	// Chromium 156 takes WebTransport's headers option only behind this
	// flag: the one engine here that sends the header.
	t.Run("chromium-experimental", func(t *testing.T) {
		path := browsertest.Chromium(t)
		browsertest.NPM(t, ".", "node_modules/playwright-core")
		fn(t, func(t *testing.T, pageURL string, timeout time.Duration, v any) {
			browsertest.Drive(t, ".", "test/run.mjs", path, pageURL, timeout, v, "--enable-experimental-web-platform-features")
		})
	})
	t.Run("firefox", func(t *testing.T) {
		path := browsertest.Firefox(t)
		browsertest.NPM(t, ".", "node_modules/puppeteer-core")
		fn(t, func(t *testing.T, pageURL string, timeout time.Duration, v any) {
			browsertest.DriveFirefox(t, ".", "test/firefox.mjs", path, pageURL, timeout, v)
		})
	})
}

// authPages serves js/ (the test pages and their bundles) on 127.0.0.1,
// with cfg as /auth-config.json (the tokens reach the page there, never in
// a page URL) and the extra handlers at their paths. It returns the auth
// page's URL.
func authPages(t *testing.T, cfg any, extra map[string]http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(".")))
	mux.HandleFunc("/auth-config.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(cfg)
	})
	for path, h := range extra {
		mux.Handle(path, h)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/test/auth.html"
}

// probeStep is one attempt of the probe page: its outcome, and where the
// transport put the token (tokenPlacement).
type probeStep struct {
	Value     any
	Error     string
	Timeout   bool
	Placement string
	Calls     int
}

// TestTokenPlacementProbe finds out, per engine, whether the browser's
// WebTransport sends an Authorization header given in the constructor's
// headers option (w3c/webtransport PR 713), as a bare WebTransport server
// records the CONNECT; and checks the transport against it (docs/spec.md
// §9.1, "Browsers"): webTransportSendsHeaders (the getter probe, no round
// trip) says yes exactly where the header arrived; tokenIn 'auto' sends
// the token there in the header, elsewhere in the access_token query
// parameter, and never both; 'query' always in the query; 'header' in the
// header, or where the engine sends none an error before any CONNECT; the
// token function is asked at each start(); an error of a CONNECT that
// carried the token in its URL does not name the token, nor does the
// console.
func TestTokenPlacementProbe(t *testing.T) {
	eachEngine(t, func(t *testing.T, drive driveFunc) {
		rec := startRecorder(t)
		const tok = "probe-token"
		page := authPages(t, map[string]string{"mode": "probe", "url": rec.URL, "hash": flowtest.Cert.HashHex(), "token": tok}, nil)
		var res struct {
			Error        string
			SendsHeaders bool
			Steps        map[string]probeStep
			Console      []string
			OwnConsole   []string
			UserAgent    string
		}
		drive(t, page, 60*time.Second, &res)
		if res.Error != "" {
			t.Fatalf("the page failed: %s\nconsole:\n%s", res.Error, strings.Join(res.Console, "\n"))
		}
		seen := rec.Seen()
		t.Logf("browser: %s", res.UserAgent)

		// The engine itself.
		raw := seen["raw"]
		if res.Steps["raw"].Value != "ready" {
			t.Errorf("a bare WebTransport with headers: %+v; want a session", res.Steps["raw"])
		}
		sent := raw.Authorization == "Bearer "+tok+"-raw"
		if raw.Authorization != "" && !sent {
			t.Errorf("the bare CONNECT carried Authorization %q, want %q or none", raw.Authorization, "Bearer "+tok+"-raw")
		}
		t.Logf("engine sends WebTransport headers: %v (the server saw Authorization %q); the getter probe says %v", sent, raw.Authorization, res.SendsHeaders)
		if res.SendsHeaders != sent {
			t.Errorf("webTransportSendsHeaders() = %v, but the CONNECT with headers carried Authorization: %v", res.SendsHeaders, sent)
		}

		// The transport's own placements.
		want := map[string]string{"auto": "query", "query": "query", "header": "header"}
		if sent {
			want["auto"] = "header"
		}
		for i, name := range []string{"auto", "query", "header"} {
			st, c := res.Steps[name], seen[name]
			fresh := tok + "-" + string(rune('1'+i))
			if st.Calls != i+1 {
				t.Errorf("tokenIn %s: the token function was called %d times by then, want %d (once per start())", name, st.Calls, i+1)
			}
			if name == "header" && !sent {
				// The engine cannot: an error before any CONNECT.
				if _, ok := seen[name]; ok || !strings.Contains(st.Error, "sends no request headers") || strings.Contains(st.Error, tok) {
					t.Errorf("tokenIn header on an engine that sends no headers: %+v, CONNECT %+v; want an error saying so, and no CONNECT", st, c)
				}
				continue
			}
			if st.Error != "" || st.Timeout || st.Placement != want[name] {
				t.Errorf("tokenIn %s: %+v; want a session with the token in the %s", name, st, want[name])
			}
			switch want[name] {
			case "header":
				if c.Authorization != "Bearer "+fresh || c.Query != "" {
					t.Errorf("tokenIn %s: the server saw %+v; want Authorization Bearer %s and no query token", name, c, fresh)
				}
			case "query":
				if c.Query != fresh || c.Authorization != "" {
					t.Errorf("tokenIn %s: the server saw %+v; want access_token=%s and no Authorization", name, c, fresh)
				}
			}
			t.Logf("tokenIn %s: the transport used the %s; the server saw Authorization %q, access_token %q", name, st.Placement, c.Authorization, c.Query)
		}

		// A failed CONNECT whose URL held the token.
		bad := res.Steps["badhash"]
		if bad.Error == "" || bad.Placement != "query" || !strings.Contains(bad.Error, "serverCertificateHashes") {
			t.Errorf("a wrong certificate hash with the token in the query: %+v; want an error naming serverCertificateHashes", bad)
		}
		for _, s := range append([]string{bad.Error}, res.OwnConsole...) {
			if strings.Contains(s, tok) {
				t.Errorf("the token is in an error or the page's console output: %q", s)
			}
		}
		t.Logf("the failed CONNECT's error: %s", bad.Error)
		// The browser's own console messages are beyond the page: say so
		// when one quotes a URL with the token (spec §9.1 warns of it).
		for _, s := range res.Console {
			if strings.Contains(s, tok) {
				t.Logf("the browser's own console quotes the CONNECT's URL, token included: %q", s)
			}
		}
	})
}

// sdkAuthCase is one SDK client of the sdk page: where its transport put
// the token, the connect's failure, and whoami's answer.
type sdkAuthCase struct {
	Version   string
	Placement string
	Connect   *failure
	Call      *failure
	Whoami    *demotools.Whoami
	Ping      string
}

// failure is a step of the page that failed, or did not settle in time.
type failure struct {
	Error   string
	Timeout bool
}

func (f *failure) String() string {
	if f == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%+v", *f)
}

// TestSDKClientWithToken: the official SDK clients (v2 and v1) over the
// transport, in each engine, against a flow.Server that checks tokens
// (ServerConfig.Auth: bearer.NewJWTVerifier against a real OpenID provider,
// internal/oidctest, with AllowQuery as mcp-flow-server sets it;
// docs/spec.md §9.1): with a valid token whoami answers with its subject,
// the server having seen it where the transport said it put it; without a
// token, and with a token signed by a key not in the provider's JWKS, the
// connect fails in the page and the server refuses the CONNECT (an "auth"
// refusal) and holds no session.
func TestSDKClientWithToken(t *testing.T) {
	eachEngine(t, func(t *testing.T, drive driveFunc) {
		p := oidctest.Start(t)
		var (
			mu           sync.Mutex
			verify       bearer.Verifier // set once the server's URL (the audience) is known
			placed       []string        // where each token the server checked came: header or query
			opened       atomic.Int32
			refusals     []string
			httpSubjects []string // the fallback's requests: the subject of each one's token
		)
		jwt := func(ctx context.Context, tok string, r *http.Request) (*bearer.TokenInfo, error) {
			mu.Lock()
			v := verify
			mu.Unlock()
			return v(ctx, tok, r)
		}
		srv := flowtest.Serve(t, flow.ServerConfig{
			Auth: bearer.Config{
				AllowQuery: true,
				Verifier: func(ctx context.Context, tok string, r *http.Request) (*bearer.TokenInfo, error) {
					where := "query"
					if r.Header.Get("Authorization") != "" {
						where = "header"
					}
					mu.Lock()
					placed = append(placed, where)
					mu.Unlock()
					return jwt(ctx, tok, r)
				},
			},
			OnSession: func(*flow.Session) { opened.Add(1) },
			Hooks: flow.Hooks{Observe: func(e flow.Event) {
				if e.Kind == flow.EventRefused {
					mu.Lock()
					refusals = append(refusals, e.Outcome+": "+e.Reason)
					mu.Unlock()
				}
			}},
		})
		resource := srv.URL()
		v, err := bearer.NewJWTVerifier(t.Context(), bearer.JWTConfig{Issuer: p.Issuer, Audience: resource, JWKS: p.JWKSURL()})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		verify = v
		mu.Unlock()
		good := p.Token(t, oidctest.TokenOptions{Audience: resource, Subject: "alice", Scope: "mcp"})
		foreign := p.Token(t, oidctest.TokenOptions{Audience: resource, Subject: "mallory", Foreign: true})
		// The fallback's server: a go-sdk Streamable HTTP server behind the
		// same token check (header only), on the page's origin.
		sdkSrv := mcp.NewServer(&mcp.Implementation{Name: "fallback-with-token", Version: "0.1.0"}, nil)
		mcp.AddTool(sdkSrv, &mcp.Tool{Name: "ping", Description: "answers pong"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
		streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkSrv }, nil)
		front := bearer.Config{Verifier: jwt}.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			httpSubjects = append(httpSubjects, bearer.TokenInfoFrom(r.Context()).UserID)
			mu.Unlock()
			streamable.ServeHTTP(w, r)
		}))
		page := authPages(t, map[string]string{"mode": "sdk", "url": resource, "hash": flowtest.Cert.HashHex(), "token": good, "badToken": foreign},
			map[string]http.Handler{"/mcp": front})
		var res struct {
			Error                     string
			Valid, ValidV1, None, Bad sdkAuthCase
			Fallback                  sdkAuthCase
			Console, OwnConsole       []string
			UserAgent                 string
		}
		drive(t, page, 90*time.Second, &res)
		if res.Error != "" {
			t.Fatalf("the page failed: %s\nconsole:\n%s", res.Error, strings.Join(res.Console, "\n"))
		}
		t.Logf("browser: %s", res.UserAgent)
		for _, c := range []sdkAuthCase{res.Valid, res.ValidV1} {
			if c.Connect != nil || c.Call != nil || c.Whoami == nil || !c.Whoami.Authenticated || c.Whoami.Subject != "alice" {
				t.Errorf("SDK %s with a valid token: %+v; want whoami to say alice", c.Version, c)
				continue
			}
			t.Logf("SDK %s with a valid token (in the %s): whoami says %+v", c.Version, c.Placement, *c.Whoami)
		}
		for name, c := range map[string]sdkAuthCase{"no token": res.None, "a foreign-signed token": res.Bad} {
			if c.Connect == nil || c.Connect.Error == "" || c.Whoami != nil {
				t.Errorf("SDK %s with %s: %+v; want connect to fail in the page", c.Version, name, c)
				continue
			}
			t.Logf("SDK %s with %s: connect failed: %s", c.Version, name, c.Connect.Error)
		}
		for _, s := range append([]string{res.None.Connect.String(), res.Bad.Connect.String()}, res.OwnConsole...) {
			if strings.Contains(s, good) || strings.Contains(s, foreign) {
				t.Errorf("a token is in an error or the page's console output: %q", s)
			}
		}

		// The fallback: the SDK's Streamable HTTP transport with the token
		// in its Authorization header, on every request.
		if f := res.Fallback; f.Connect != nil || f.Call != nil || f.Ping != "pong" || f.Placement != "header" {
			t.Errorf("the fallback with a token: %+v; want ping to answer pong, the token in the header", f)
		}

		mu.Lock()
		defer mu.Unlock()
		if len(httpSubjects) < 3 || slices.ContainsFunc(httpSubjects, func(s string) bool { return s != "alice" }) {
			t.Errorf("the fallback's requests carried tokens of %q; want alice's on each (initialize, initialized, tools/call)", httpSubjects)
		} else {
			t.Logf("the fallback: %d requests, each with alice's token in Authorization", len(httpSubjects))
		}
		want := res.Valid.Placement
		if len(placed) != 3 || placed[0] != want || placed[1] != want || placed[2] != want {
			t.Errorf("the server checked tokens from %v; want three (two valid, one foreign), each in the %s as the transport said", placed, want)
		}
		auth := 0
		for _, r := range refusals {
			if strings.HasPrefix(r, "auth: ") {
				auth++
			}
			for _, tok := range []string{good, foreign} {
				if strings.Contains(r, tok) {
					t.Errorf("a refusal's reason holds a token: %q", r)
				}
			}
		}
		if n := opened.Load(); n != 2 || auth != 2 {
			t.Errorf("the server opened %d sessions and refused %d CONNECTs for their token (%q); want 2 and 2", n, auth, refusals)
		}
		t.Logf("server: %d sessions, refusals %q", opened.Load(), refusals)
	})
}
