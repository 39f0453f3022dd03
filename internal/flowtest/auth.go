package flowtest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// BearerHeader is the Authorization header of a bearer token (RFC 6750 §2.1).
func BearerHeader(tok string) http.Header {
	return http.Header{"Authorization": {"Bearer " + tok}}
}

// ConnectOnce sends one WebTransport CONNECT to url with h over tlsConf
// and returns the response (nil if none came) and the dialer's error; a
// session that opens is closed.
func ConnectOnce(t testing.TB, url string, h http.Header, tlsConf *tls.Config) (*http.Response, error) {
	t.Helper()
	tr := &webtransport.Transport{TLSClientConfig: tlsConf,
		QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true}}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, sess, err := tr.Dial(ctx, url, h)
	if sess != nil {
		sess.CloseWithError(0, "")
	}
	return resp, err
}

// SettledGoroutines waits (up to 10 s) until the goroutine count is at most
// want, or has stopped falling, and returns it. want 0: until it stops
// falling.
func SettledGoroutines(want int) int {
	deadline := time.Now().Add(10 * time.Second)
	last, still := runtime.NumGoroutine(), 0
	for time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(20 * time.Millisecond) // polling a count: there is no event to wait on
		n := runtime.NumGoroutine()
		if want > 0 && n <= want {
			return n
		}
		if n == last {
			if still++; still == 10 && want == 0 {
				return n
			}
		} else {
			last, still = n, 0
		}
	}
	return runtime.NumGoroutine()
}

// Whoami calls the test tool whoami on s (demotools) and returns what it
// says of the session's token.
func Whoami(t testing.TB, s *flow.Session) demotools.Whoami {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := s.Call(ctx, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	var res struct {
		StructuredContent demotools.Whoami `json:"structuredContent"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	t.Logf("whoami: %s", r.Result)
	return res.StructuredContent
}
