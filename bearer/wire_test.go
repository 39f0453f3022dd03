package bearer_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bearer"
)

// resource is the protected resource of these tests (RFC 8707), the
// README's example server.
const resource = "https://127.0.0.1:4433/mcp-flow"

var metaURL = bearer.MetadataURL(resource)

// The challenges the wire must carry (RFC 6750 §3, RFC 9728 §5.1).
var (
	challengeNoToken = `Bearer resource_metadata="https://127.0.0.1:4433/.well-known/oauth-protected-resource/mcp-flow"`
	challengeInvalid = `Bearer error="invalid_token", error_description="the access token is not valid", resource_metadata="https://127.0.0.1:4433/.well-known/oauth-protected-resource/mcp-flow"`
	challengeScope   = `Bearer error="insufficient_scope", error_description="the access token lacks a required scope", scope="tools", resource_metadata="https://127.0.0.1:4433/.well-known/oauth-protected-resource/mcp-flow"`
	challengeBoth    = `Bearer error="invalid_request", error_description="a token in both the Authorization header and the query", resource_metadata="https://127.0.0.1:4433/.well-known/oauth-protected-resource/mcp-flow"`
)

// reply is what the protected handler answers: what TokenInfoFrom gave it.
type reply struct {
	UserID string
	Scopes []string
}

// serve runs c.Middleware in front of a handler that answers with the
// request's TokenInfo, on a real HTTP server on 127.0.0.1.
func serve(t *testing.T, c bearer.Config) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(c.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := bearer.TokenInfoFrom(r.Context())
		if info == nil {
			http.Error(w, "no TokenInfo in the context", http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(reply{info.UserID, info.Scopes})
	})))
	t.Cleanup(srv.Close)
	return srv
}

// answer is one response as seen on the wire.
type answer struct {
	status    int
	challenge string
	noStore   bool
	body      string
}

// get sends GET srv.URL+path with token (if any) in Authorization.
func get(t *testing.T, srv *httptest.Server, path, token string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("WWW-Authenticate"), resp.Header.Get("Cache-Control") == "no-store", string(b)}
}

// want checks a refusal's status and exact challenge on the wire.
func (a answer) want(t *testing.T, what string, status int, challenge string) {
	t.Helper()
	if a.status != status || a.challenge != challenge {
		t.Errorf("%s: got %d, WWW-Authenticate: %s\nwant %d, WWW-Authenticate: %s", what, a.status, a.challenge, status, challenge)
	}
	t.Logf("%s: %d WWW-Authenticate: %s", what, a.status, a.challenge)
}

// staticVerifier accepts the one token "good" (subject alice, scope tools)
// and counts its calls: for the checks that need no issuer.
func staticVerifier(calls *atomic.Int32) bearer.Verifier {
	return func(_ context.Context, tok string, _ *http.Request) (*bearer.TokenInfo, error) {
		calls.Add(1)
		if tok != "good" {
			return nil, bearer.ErrInvalidToken
		}
		return &bearer.TokenInfo{UserID: "alice", Scopes: []string{"tools"}, Expiration: time.Now().Add(time.Hour)}, nil
	}
}

// TestQueryToken: a token in the access_token query parameter counts only
// with AllowQuery (RFC 6750 §2.3); a token in both places is 400
// invalid_request without reaching the verifier; a refusal of a request
// with its token in the URL is not cached.
func TestQueryToken(t *testing.T) {
	var calls atomic.Int32
	off := serve(t, bearer.Config{Verifier: staticVerifier(&calls), ResourceMetadataURL: metaURL})
	on := serve(t, bearer.Config{Verifier: staticVerifier(&calls), ResourceMetadataURL: metaURL, AllowQuery: true})

	get(t, off, "/?access_token=good", "").want(t, "query token without AllowQuery", 401, challengeNoToken)
	a := get(t, on, "/?access_token=good", "")
	if a.status != 200 || !strings.Contains(a.body, `"UserID":"alice"`) {
		t.Errorf("query token with AllowQuery: %d %q, want 200 for alice", a.status, a.body)
	}
	n := calls.Load()
	a = get(t, on, "/?access_token=good", "good")
	a.want(t, "token in Authorization and query", 400, challengeBoth)
	if calls.Load() != n {
		t.Error("a request with two tokens reached the verifier")
	}
	a = get(t, on, "/?access_token=bad", "")
	a.want(t, "bad query token", 401, challengeInvalid)
	if !a.noStore {
		t.Error("a refusal of a token in the URL lacks Cache-Control: no-store")
	}
	if strings.Contains(a.body, "bad") {
		t.Errorf("the refusal's body quotes the token: %q", a.body)
	}
}

// TestMetadata: the protected resource metadata (RFC 9728 §3) at the
// well-known URL of the resource, as a client discovers it.
func TestMetadata(t *testing.T) {
	for in, want := range map[string]string{
		"https://127.0.0.1:4433/mcp-flow": "https://127.0.0.1:4433/.well-known/oauth-protected-resource/mcp-flow",
		"https://h.example/":              "https://h.example/.well-known/oauth-protected-resource",
		"https://h.example":               "https://h.example/.well-known/oauth-protected-resource",
		"https://h.example/a/b/?x=1":      "https://h.example/.well-known/oauth-protected-resource/a/b?x=1",
		"https://h.example/with%20space":  "https://h.example/.well-known/oauth-protected-resource/with%20space",
		"not a url":                       "",
	} {
		if got := bearer.MetadataURL(in); got != want {
			t.Errorf("MetadataURL(%q) = %q, want %q", in, got, want)
		}
	}
	mux := http.NewServeMux()
	mux.Handle(bearer.MetadataPath(resource), bearer.MetadataHandler(resource, []string{"https://idp.example"}, []string{"tools"}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(metaURL)
	resp, err := srv.Client().Get(srv.URL + u.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", u.Path, resp.StatusCode, err)
	}
	got, _ := json.Marshal(m)
	want := `{"authorization_servers":["https://idp.example"],"bearer_methods_supported":["header"],"resource":"https://127.0.0.1:4433/mcp-flow","scopes_supported":["tools"]}`
	if string(got) != want {
		t.Errorf("metadata %s\nwant %s", got, want)
	}
}

// TestChallenge: the exact WWW-Authenticate values (RFC 6750 §3, RFC 9728
// §5.1).
func TestChallenge(t *testing.T) {
	for _, c := range []struct {
		r    bearer.Refusal
		meta string
		want string
	}{
		{bearer.Refusal{Status: 401}, "", "Bearer"},
		{bearer.Refusal{Status: 401}, metaURL, challengeNoToken},
		{bearer.Refusal{Status: 401, Code: "invalid_token", Description: "the access token is not valid"}, metaURL, challengeInvalid},
		{bearer.Refusal{Status: 403, Code: "insufficient_scope", Description: "the access token lacks a required scope", Scope: "tools"}, metaURL, challengeScope},
		{bearer.Refusal{Status: 403, Code: "insufficient_scope", Scope: "a b"}, "", `Bearer error="insufficient_scope", scope="a b"`},
		{bearer.Refusal{Status: 400, Code: "invalid_request", Description: `say "no"`}, "", `Bearer error="invalid_request", error_description="say \"no\""`},
	} {
		if got := c.r.Challenge(c.meta); got != c.want {
			t.Errorf("Challenge(%+v, %q) =\n%s\nwant\n%s", c.r, c.meta, got, c.want)
		}
	}
}

// TestRedact: the access_token of a URL never reaches a log.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://h:1/mcp-flow?access_token=secret&x=1": "https://h:1/mcp-flow?access_token=REDACTED&x=1",
		"https://h:1/mcp-flow?x=1":                     "https://h:1/mcp-flow?x=1",
		"/mcp-flow?access_token=a&access_token=b":      "/mcp-flow?access_token=REDACTED",
	} {
		u, _ := url.Parse(in)
		if got := bearer.Redact(u); got != want {
			t.Errorf("Redact(%s) = %s, want %s", in, got, want)
		}
	}
	if bearer.Redact(nil) != "" {
		t.Error("Redact(nil) is not empty")
	}
}
