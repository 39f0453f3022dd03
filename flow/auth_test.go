package flow_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bearer"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// tokenTable is a Verifier over a fixed table of opaque tokens (the JWT
// verifier's tests are the end-to-end ones, cmd/mcp-flow-server): a token
// not in it, or past its expiry, is invalid.
type tokenTable map[string]bearer.TokenInfo

func (tt tokenTable) verify(_ context.Context, tok string, _ *http.Request) (*bearer.TokenInfo, error) {
	info, ok := tt[tok]
	if !ok {
		return nil, fmt.Errorf("%w: unknown token", bearer.ErrInvalidToken)
	}
	if !info.Expiration.IsZero() && time.Now().After(info.Expiration) {
		return nil, fmt.Errorf("%w: expired", bearer.ErrInvalidToken)
	}
	return &info, nil
}

const testMetadataURL = "https://127.0.0.1/.well-known/oauth-protected-resource/mcp-flow"

var testTokens = tokenTable{
	"tok-alice":   {UserID: "alice", Scopes: []string{"mcp", "extra"}, Expiration: time.Now().Add(time.Hour)},
	"tok-noscope": {UserID: "bob", Scopes: []string{"other"}, Expiration: time.Now().Add(time.Hour)},
	"tok-expired": {UserID: "carol", Scopes: []string{"mcp"}, Expiration: time.Now().Add(-time.Minute)},
}

// authServer runs a server that asks for a token with scope mcp.
func authServer(t *testing.T, ev *events, tt tokenTable, mod func(*flow.ServerConfig)) *flow.Server {
	t.Helper()
	return startServer(t, func(c *flow.ServerConfig) {
		c.Auth = bearer.Config{Verifier: tt.verify, Scopes: []string{"mcp"}, ResourceMetadataURL: testMetadataURL, AllowQuery: true}
		if ev != nil {
			c.Hooks.Observe = ev.observe
		}
		if mod != nil {
			mod(c)
		}
	})
}

// TestAuthRefusalsOnTheWire: every way a CONNECT can fail the token check
// gets its status and challenge (RFC 6750 §3, RFC 9728 §5.1), an
// EventRefused "auth" that names no token, and no session.
func TestAuthRefusalsOnTheWire(t *testing.T) {
	ev := newEvents()
	logs := &flowtest.SyncBuffer{}
	srv := authServer(t, ev, testTokens, func(c *flow.ServerConfig) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	meta := `resource_metadata="` + testMetadataURL + `"`
	cases := []struct {
		name      string
		query     string
		h         http.Header
		status    int
		challenge string
	}{
		{"no token", "", nil, 401, `Bearer ` + meta},
		{"garbage", "", flowtest.BearerHeader("garbage-token-xyz"), 401, `Bearer error="invalid_token", error_description="the access token is not valid", ` + meta},
		{"expired", "", flowtest.BearerHeader("tok-expired"), 401, `Bearer error="invalid_token", error_description="the access token is not valid", ` + meta},
		{"missing scope", "", flowtest.BearerHeader("tok-noscope"), 403, `Bearer error="insufficient_scope", error_description="the access token lacks a required scope", scope="mcp", ` + meta},
		{"not bearer", "", http.Header{"Authorization": {"Basic dG9rLWFsaWNlOg=="}}, 400, `Bearer error="invalid_request", error_description="Authorization is not a Bearer token", ` + meta},
		{"garbage in query", "?access_token=query-garbage-xyz", nil, 401, `Bearer error="invalid_token", error_description="the access token is not valid", ` + meta},
		{"header and query", "?access_token=tok-alice", flowtest.BearerHeader("tok-alice"), 400, `Bearer error="invalid_request", error_description="a token in both the Authorization header and the query", ` + meta},
	}
	for _, c := range cases {
		resp, err := flowtest.ConnectOnce(t, srv.URL()+c.query, c.h, clientTLS(t))
		if err == nil || resp == nil {
			t.Fatalf("%s: CONNECT accepted (%v, %v)", c.name, resp, err)
		}
		got := resp.Header.Get("WWW-Authenticate")
		t.Logf("%s: HTTP %d, WWW-Authenticate: %s, Cache-Control: %s", c.name, resp.StatusCode, got, resp.Header.Get("Cache-Control"))
		if resp.StatusCode != c.status || got != c.challenge {
			t.Errorf("%s: HTTP %d, WWW-Authenticate %q; want %d, %q", c.name, resp.StatusCode, got, c.status, c.challenge)
		}
	}
	refused := ev.match(func(e flow.Event) bool { return e.Kind == flow.EventRefused && e.Outcome == "auth" })
	if len(refused) != len(cases) {
		t.Errorf("%d EventRefused auth, want %d: %+v", len(refused), len(cases), ev.kind(flow.EventRefused))
	}
	if !strings.Contains(logs.String(), "auth") {
		t.Errorf("no refusal in the server's debug log:\n%s", logs)
	}
	for _, tok := range []string{"garbage-token-xyz", "tok-expired", "tok-noscope", "dG9rLWFsaWNlOg", "query-garbage-xyz", "tok-alice"} {
		for _, e := range refused {
			if strings.Contains(e.Reason, tok) {
				t.Errorf("an event names a token: %q", e.Reason)
			}
		}
		if strings.Contains(logs.String(), tok) {
			t.Errorf("the server's log names a token (%s):\n%s", tok, logs)
		}
	}
	if n := len(ev.kind(flow.EventSessionOpen)); n != 0 || srv.Sessions() != 0 {
		t.Errorf("%d sessions opened, %d held; want none", n, srv.Sessions())
	}
}

// TestAuthRefusedConnectsLeaveNothing: refused CONNECTs on one QUIC
// connection that stays open cost the server no session and no goroutine
// (the check comes before the slot, spec §9.1); once the connection ends,
// the process is back at its goroutine count.
func TestAuthRefusedConnectsLeaveNothing(t *testing.T) {
	ev := newEvents()
	srv := authServer(t, ev, testTokens, nil)
	before := flowtest.SettledGoroutines(0) // the server's acceptors are up
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tlsConf := clientTLS(t).Clone()
	tlsConf.NextProtos = []string{http3.NextProtoH3}
	qc, err := quic.DialAddr(ctx, srv.Addr().String(), tlsConf, &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true, MaxIncomingStreams: 1000})
	if err != nil {
		t.Fatal(err)
	}
	tr := &webtransport.Transport{}
	cc, err := tr.NewClientConn(qc)
	if err != nil {
		t.Fatal(err)
	}
	connect := func() {
		t.Helper()
		resp, sess, err := cc.Dial(ctx, srv.URL(), flowtest.BearerHeader("garbage-token-xyz"))
		if sess != nil {
			sess.CloseWithError(0, "")
			t.Fatal("a CONNECT with a bad token was accepted")
		}
		if resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("CONNECT: %v, %v; want 401", resp, err)
		}
	}
	connect() // the connection's own goroutines, on both sides, are up now
	ev.waitFor(t, "the first refusal", 1, func(e flow.Event) bool { return e.Outcome == "auth" })
	base := flowtest.SettledGoroutines(0)
	const n = 200
	for range n {
		connect()
	}
	ev.waitFor(t, "refusals", n+1, func(e flow.Event) bool { return e.Outcome == "auth" })
	during := flowtest.SettledGoroutines(base)
	t.Logf("goroutines: %d before the connection, %d after one refused CONNECT, %d after %d more (connection open)", before, base, during, n)
	if during > base+n/20 {
		t.Errorf("%d goroutines after %d refused CONNECTs, %d before them: refused CONNECTs keep goroutines", during, n, base)
	}
	if srv.Sessions() != 0 || len(ev.kind(flow.EventSessionOpen)) != 0 {
		t.Errorf("sessions: %d held, %d opened; want none", srv.Sessions(), len(ev.kind(flow.EventSessionOpen)))
	}
	qc.CloseWithError(0, "")
	tr.Close()
	if after := flowtest.SettledGoroutines(before); after > before {
		t.Errorf("%d goroutines after the connection closed, %d before it", after, before)
	}
}

// TestAuthDialWithToken: Dial sends ClientConfig.Token's token, asked for on
// every dial; the handler sees the verified token (whoami); a dial with no
// or a bad token fails with a *RefusedError naming 401 and the challenge,
// never the token.
func TestAuthDialWithToken(t *testing.T) {
	srv := authServer(t, nil, testTokens, nil)
	var asked atomic.Int32
	tokens := []string{"tok-alice", "tok-alice"}
	s := dial(t, srv, func(c *flow.ClientConfig) {
		c.Token = func(context.Context) (string, error) { return tokens[asked.Add(1)-1], nil }
	})
	w := flowtest.Whoami(t, s)
	if !w.Authenticated || w.Subject != "alice" || strings.Join(w.Scopes, " ") != "mcp extra" || w.ExpiresAt == "" {
		t.Errorf("whoami: %+v, want alice with mcp extra", w)
	}
	if ti := s.TokenInfo(); ti != nil {
		t.Errorf("a client session has token info %+v", ti)
	}
	dial(t, srv, func(c *flow.ClientConfig) {
		c.Token = func(context.Context) (string, error) { return tokens[asked.Add(1)-1], nil }
	})
	if asked.Load() != 2 {
		t.Errorf("Token asked %d times for two dials", asked.Load())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		tok    string
		status int
		want   string
	}{
		{"", 401, "HTTP 401 Unauthorized: WWW-Authenticate: Bearer resource_metadata="},
		{"garbage-token-xyz", 401, `HTTP 401 Unauthorized: WWW-Authenticate: Bearer error="invalid_token"`},
		{"tok-noscope", 403, `HTTP 403 Forbidden: WWW-Authenticate: Bearer error="insufficient_scope"`},
	} {
		cfg := flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t), RefusedRetries: -1}
		if c.tok != "" {
			cfg.Token = func(context.Context) (string, error) { return c.tok, nil }
		}
		s, err := flow.Dial(ctx, srv.URL(), cfg)
		if err == nil {
			s.Close()
			t.Fatalf("token %q: accepted", c.tok)
		}
		var re *flow.RefusedError
		if !errors.As(err, &re) || re.Status != c.status || !strings.Contains(err.Error(), c.want) {
			t.Errorf("token %q: %v; want a *RefusedError %d with %q", c.tok, err, c.status, c.want)
		}
		if c.tok != "" && strings.Contains(err.Error(), c.tok) {
			t.Errorf("the error names the token: %v", err)
		}
		t.Logf("token %q: %v", c.tok, err)
	}
	// A Token that fails fails Dial before anything is sent.
	_, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t),
		Token: func(context.Context) (string, error) { return "", errors.New("no token file") }})
	if err == nil || !strings.Contains(err.Error(), "no token file") {
		t.Errorf("failing Token: %v", err)
	}
	// A token in the query (AllowQuery, for browsers) is taken too; the
	// error of a refused one leaves the query out.
	s3 := dialURL(t, srv.URL()+"?"+url.Values{bearer.QueryParam: {"tok-alice"}}.Encode(), nil)
	if w := flowtest.Whoami(t, s3); w.Subject != "alice" {
		t.Errorf("query token: whoami %+v", w)
	}
	_, err = flow.Dial(ctx, srv.URL()+"?access_token=query-garbage-xyz", flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t)})
	if err == nil || strings.Contains(err.Error(), "query-garbage-xyz") || !strings.Contains(err.Error(), "401") {
		t.Errorf("query garbage: %v", err)
	}
}

// TestAuthStateless: a 2026-07-28 session ($/hello, server/discover) dials
// with a token as a 2025 one does, and is refused without one.
func TestAuthStateless(t *testing.T) {
	srv := authServer(t, nil, testTokens, nil)
	s := dial(t, srv, func(c *flow.ClientConfig) {
		c.ProtocolVersion = protocol.MCP20260728
		c.Token = func(context.Context) (string, error) { return "tok-alice", nil }
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Call(ctx, protocol.MethodDiscover, map[string]any{}); err != nil {
		t.Fatalf("server/discover: %v", err)
	}
	if w := flowtest.Whoami(t, s); w.Subject != "alice" {
		t.Errorf("whoami over 2026-07-28: %+v", w)
	}
	_, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t), ProtocolVersion: protocol.MCP20260728})
	var re *flow.RefusedError
	if !errors.As(err, &re) || re.Status != http.StatusUnauthorized {
		t.Errorf("2026-07-28 without a token: %v, want a 401 *RefusedError", err)
	}
}

// TestAuthTokenExpiry: when the session's token expires the server shuts
// the session down (spec §9.1): $/shutdown "access token expired", the
// request in flight finishes, a new one is refused (ErrShuttingDown), and the
// session ends cleanly.
func TestAuthTokenExpiry(t *testing.T) {
	tt := tokenTable{"short": {UserID: "dave", Scopes: []string{"mcp"}, Expiration: time.Now().Add(3 * time.Second)}}
	release := make(chan struct{})
	var started <-chan struct{}
	srv := authServer(t, nil, tt, func(c *flow.ServerConfig) { started = gateTool(c, "echo", release) })
	s := dial(t, srv, func(c *flow.ClientConfig) {
		c.Token = func(context.Context) (string, error) { return "short", nil }
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inflight := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "held"}})
		inflight <- err
	}()
	<-started
	select {
	case <-s.Draining():
	case <-ctx.Done():
		t.Fatal("no $/shutdown after the token expired")
	}
	if r := s.PeerShutdownReason(); r != flow.ReasonTokenExpired {
		t.Errorf("$/shutdown reason %q, want %q", r, flow.ReasonTokenExpired)
	}
	if _, err := s.Call(ctx, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}); !errors.Is(err, flow.ErrShuttingDown) {
		t.Errorf("a call after expiry: %v, want ErrShuttingDown", err)
	}
	close(release)
	if err := <-inflight; err != nil {
		t.Errorf("the call in flight at expiry: %v", err)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("the session did not end after the drain")
	}
	var se *flow.SessionError
	if err := s.Err(); !errors.As(err, &se) || se.Code != flow.CloseOK {
		t.Errorf("session ended with %v, want a clean close", err)
	}
	// The same token is now refused: the client needs a fresh one.
	_, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t),
		Token: func(context.Context) (string, error) { return "short", nil }})
	var re *flow.RefusedError
	if !errors.As(err, &re) || re.Status != http.StatusUnauthorized {
		t.Errorf("redial with the expired token: %v, want 401", err)
	}
}

// TestWhoamiAnonymous: without authentication whoami says so: no Auth, or
// a zero bearer.Config (no Verifier), which checks nothing.
func TestWhoamiAnonymous(t *testing.T) {
	for name, auth := range map[string]flow.Authenticator{"no Auth": nil, "zero bearer.Config": bearer.Config{}} {
		s := dial(t, startServer(t, func(c *flow.ServerConfig) { c.Auth = auth }), nil)
		if w := flowtest.Whoami(t, s); w.Authenticated || w.Subject != "" {
			t.Errorf("%s: whoami: %+v", name, w)
		}
	}
}

// authFunc is an Authenticator of the test's own, not package bearer's.
type authFunc func(w http.ResponseWriter, r *http.Request) (*flow.TokenInfo, error)

func (f authFunc) Authenticate(w http.ResponseWriter, r *http.Request) (*flow.TokenInfo, error) {
	return f(w, r)
}

// TestAuthenticatorOfOurOwn: flow takes any Authenticator (spec §9.1): what
// it accepts is the session's TokenInfo, claims and all; what it refuses
// is its own answer on the wire, and an EventRefused "auth" with its reason
// and the CONNECT's path, not its query.
func TestAuthenticatorOfOurOwn(t *testing.T) {
	ev := newEvents()
	sessions := make(chan *flow.Session, 1)
	srv := startServer(t, func(c *flow.ServerConfig) {
		c.Hooks.Observe = ev.observe
		c.OnSession = func(s *flow.Session) { sessions <- s }
		c.Auth = authFunc(func(w http.ResponseWriter, r *http.Request) (*flow.TokenInfo, error) {
			if r.Header.Get("Authorization") != "Bearer let-me-in" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="ours"`)
				http.Error(w, "not you", http.StatusUnauthorized)
				return nil, errors.New("not the test's token")
			}
			return &flow.TokenInfo{UserID: "eve", Scopes: []string{"mcp"}, Extra: map[string]any{"tenant": "t1"}}, nil
		})
	})
	s := dial(t, srv, func(c *flow.ClientConfig) {
		c.Token = func(context.Context) (string, error) { return "let-me-in", nil }
	})
	if w := flowtest.Whoami(t, s); !w.Authenticated || w.Subject != "eve" || w.ExpiresAt != "" {
		t.Errorf("whoami: %+v, want eve with no expiry", w)
	}
	if ti := (<-sessions).TokenInfo(); ti == nil || ti.UserID != "eve" || ti.Extra["tenant"] != "t1" {
		t.Errorf("the server session's TokenInfo: %+v, want eve of tenant t1", ti)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := flow.Dial(ctx, srv.URL()+"?probe=secret-query", flow.ClientConfig{TLSConfig: clientTLS(t), Logger: testLogger(t), RefusedRetries: -1,
		Token: func(context.Context) (string, error) { return "wrong-token", nil }})
	var re *flow.RefusedError
	if !errors.As(err, &re) || re.Status != http.StatusUnauthorized || re.Challenge != `Bearer realm="ours"` {
		t.Errorf("a refused dial: %v, want the Authenticator's 401 and challenge", err)
	}
	ev.waitFor(t, "the refusal", 1, func(e flow.Event) bool { return e.Kind == flow.EventRefused && e.Outcome == "auth" })
	r := ev.match(func(e flow.Event) bool { return e.Outcome == "auth" })[0].Reason
	if !strings.HasPrefix(r, "not the test's token (a CONNECT to /") || strings.Contains(r, "secret-query") {
		t.Errorf("refusal reason %q, want the Authenticator's reason and the path only", r)
	}
}
