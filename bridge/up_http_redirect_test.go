package bridge_test

import (
	"bufio"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// credentialLog is a go-sdk Streamable HTTP server that notes the
// credentials each request brings.
type credentialLog struct {
	h    http.Handler
	mu   sync.Mutex
	seen []string // "METHOD scheme auth key" per request
}

func newCredentialLog() *credentialLog {
	sdk := sdkfixture.NewServer()
	return &credentialLog{h: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdk }, nil)}
}

func (l *credentialLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	l.mu.Lock()
	l.seen = append(l.seen, r.Method+" "+scheme+" auth="+r.Header.Get("Authorization")+" key="+r.Header.Get("X-Api-Key"))
	l.mu.Unlock()
	l.h.ServeHTTP(w, r)
}

// check fails the test unless the log holds a POST and every request
// brought the credentials (want) or none of them (!want).
func (l *credentialLog) check(t *testing.T, want bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	post := false
	for _, s := range l.seen {
		post = post || strings.HasPrefix(s, "POST ")
		has := strings.Contains(s, "auth=Bearer secret") && strings.Contains(s, "key=k-123")
		none := strings.Contains(s, "auth= key=")
		if (want && !has) || (!want && !none) {
			t.Errorf("after the redirect: %s (credentials wanted: %v)", s, want)
		}
	}
	if !post {
		t.Errorf("no POST reached the redirect's target: %v", l.seen)
	}
}

// redirectTo answers every request with 307 to base + "/real" (307 keeps
// the method and body).
func redirectTo(base string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, base+"/real", http.StatusTemporaryRedirect)
	})
}

// callThrough makes an MCP-Flow session through an HTTP upstream at
// endpoint, with a bearer token and an API key configured, and calls echo.
func callThrough(t *testing.T, endpoint string, client *http.Client) {
	t.Helper()
	cfg := flow.ServerConfig{Logger: flowtest.Quiet}
	hdr := http.Header{"Authorization": {"Bearer secret"}, "X-Api-Key": {"k-123"}}
	bridge.NewHTTPUpstream(bridge.HTTPUpstreamConfig{Endpoint: endpoint, HTTPClient: client, Header: hdr, Logger: flowtest.Quiet}).Configure(&cfg)
	srv := flowtest.Serve(t, cfg)
	ctx, s := flowtest.Dial(t, srv)
	r, err := s.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"text": "redirected"}})
	if err != nil || !strings.Contains(string(r.Result), "redirected") {
		t.Fatalf("echo through the redirect: %v", err)
	}
}

// TestHTTPUpstreamRedirectOtherPort: an endpoint that redirects to another
// port of the same host (another server) loses the configured credentials
// there; net/http's own policy looks at the host name alone and would keep
// them.
func TestHTTPUpstreamRedirectOtherPort(t *testing.T) {
	t.Parallel()
	target := newCredentialLog()
	other := httptest.NewServer(target)
	t.Cleanup(other.Close)
	front := httptest.NewServer(redirectTo(other.URL))
	t.Cleanup(front.Close)
	callThrough(t, front.URL+"/mcp", nil)
	target.check(t, false)
}

// TestHTTPUpstreamRedirectSameOrigin: a redirect within the endpoint's
// origin keeps the credentials.
func TestHTTPUpstreamRedirectSameOrigin(t *testing.T) {
	t.Parallel()
	target := newCredentialLog()
	mux := http.NewServeMux()
	mux.Handle("/real", target)
	ts := httptest.NewServer(mux)
	mux.Handle("/mcp", redirectTo(ts.URL))
	t.Cleanup(ts.Close)
	callThrough(t, ts.URL+"/mcp", nil)
	target.check(t, true)
}

// TestHTTPUpstreamRedirectToPlainHTTP: an https endpoint that redirects to
// http:// on the same host and the same port (one listener that serves TLS
// and plain HTTP, told apart by the first byte) loses the credentials:
// they would travel in clear. Only the scheme changes, so this fails
// without the bridge's own policy.
func TestHTTPUpstreamRedirectToPlainHTTP(t *testing.T) {
	t.Parallel()
	certSrv := httptest.NewTLSServer(http.NotFoundHandler()) // lends its certificate and a client that trusts it
	t.Cleanup(certSrv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	target := newCredentialLog()
	mux := http.NewServeMux()
	mux.Handle("/real", target)
	mux.Handle("/mcp", redirectTo("http://"+addr))
	srv := &http.Server{Handler: mux}
	done := make(chan struct{})
	go func() { srv.Serve(&sniffListener{Listener: ln, tls: certSrv.TLS}); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	callThrough(t, "https://"+addr+"/mcp", certSrv.Client())
	target.check(t, false)
	target.mu.Lock()
	defer target.mu.Unlock()
	for _, s := range target.seen {
		if !strings.Contains(s, " http ") {
			t.Errorf("the target saw %s, want plain http after the redirect", s)
		}
	}
}

// sniffListener hands out TLS server connections for connections whose
// first byte is a TLS handshake record (0x16), plain ones otherwise. The
// first byte is awaited on a goroutine per connection (bounded by
// sniffWait), never in Accept: a client's idle connection that sends
// nothing must not stop the server from accepting, or from closing.
type sniffListener struct {
	net.Listener
	tls   *tls.Config
	once  sync.Once
	conns chan net.Conn
	gone  chan struct{} // closed when the listener fails (it was closed)
	err   error
}

const sniffWait = 10 * time.Second

func (l *sniffListener) Accept() (net.Conn, error) {
	l.once.Do(func() {
		l.conns, l.gone = make(chan net.Conn), make(chan struct{})
		go l.loop()
	})
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.gone:
		return nil, l.err
	}
}

func (l *sniffListener) loop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.err = err
			close(l.gone)
			return
		}
		go func() {
			c.SetReadDeadline(time.Now().Add(sniffWait))
			br := bufio.NewReader(c)
			b, err := br.Peek(1)
			c.SetReadDeadline(time.Time{})
			if err != nil {
				c.Close()
				return
			}
			var out net.Conn = &peekedConn{Conn: c, r: br}
			if b[0] == 0x16 {
				out = tls.Server(out, l.tls)
			}
			select {
			case l.conns <- out:
			case <-l.gone:
				c.Close()
			}
		}()
	}
}

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
