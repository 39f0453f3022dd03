package flow_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

var testCert = flowtest.Cert

func testLogger(testing.TB) *slog.Logger { return flowtest.Logger() }

// startServer runs a server with the test tools on 127.0.0.1 and closes it
// with the test.
func startServer(t testing.TB, mod func(*flow.ServerConfig)) *flow.Server {
	t.Helper()
	return startServerTools(t, demotools.Config{Root: t.TempDir()}, mod)
}

func startServerTools(t testing.TB, tc demotools.Config, mod func(*flow.ServerConfig)) *flow.Server {
	t.Helper()
	mux, caps := flowtest.ToolsMux(t, tc)
	cfg := flow.ServerConfig{Handler: mux, Capabilities: caps, Info: flow.Implementation{Name: "test-server", Version: "1"}}
	if mod != nil {
		mod(&cfg)
	}
	return flowtest.Serve(t, cfg)
}

func clientTLS(t testing.TB) *tls.Config { return flowtest.ClientTLS(t) }

// dial connects a client to srv. It allows 60 s: under -race, with a second
// suite running beside it on this 2-core machine, a dial once took over the
// 10 s it had before (TestProgressNeverBackwards, in a contention run).
func dial(t testing.TB, srv *flow.Server, mod func(*flow.ClientConfig)) *flow.Session {
	t.Helper()
	return dialURL(t, srv.URL(), mod)
}

// dialURL is dial to url (a server's URL with a query, say).
func dialURL(t testing.TB, url string, mod func(*flow.ClientConfig)) *flow.Session {
	t.Helper()
	cfg := flow.ClientConfig{
		TLSConfig: clientTLS(t),
		Info:      flow.Implementation{Name: "test-client", Version: "1"},
		Logger:    testLogger(t),
	}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, url, cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func callTool(t testing.TB, s *flow.Session, name string, args any, opts ...flow.CallOption) *flow.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := s.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": args}, opts...)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return r
}

func textOf(t testing.TB, r *flow.Response) string {
	t.Helper()
	var res struct {
		Content []struct {
			Type, Text string
		}
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Content {
		if c.Type == "text" {
			return c.Text
		}
	}
	t.Fatalf("no text content in %s", r.Result)
	return ""
}

// rawPeer is a WebTransport client that speaks MCP-Flow by hand, so that it
// can misbehave on purpose.
type rawPeer struct {
	t    testing.TB
	sess *webtransport.Session
	ctrl *webtransport.Stream
}

func dialRaw(t testing.TB, srv *flow.Server, h http.Header) (*rawPeer, *http.Response, error) {
	t.Helper()
	tr := &webtransport.Transport{
		TLSClientConfig: clientTLS(t),
		QUICConfig:      &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true},
	}
	t.Cleanup(func() { tr.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, sess, err := tr.Dial(ctx, srv.URL(), h)
	if err != nil {
		return nil, resp, err
	}
	ctrl, err := sess.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.CloseWithError(0, "") })
	return &rawPeer{t: t, sess: sess, ctrl: ctrl}, resp, nil
}

func (p *rawPeer) write(b []byte) {
	p.t.Helper()
	if _, err := p.ctrl.Write(b); err != nil {
		p.t.Fatalf("raw write: %v", err)
	}
}

// read reads one frame (length-prefixed) with a deadline.
func (p *rawPeer) read() []byte {
	p.t.Helper()
	p.ctrl.SetReadDeadline(time.Now().Add(10 * time.Second))
	return readFrame(p.t, p.ctrl)
}

// readFrame reads one length-prefixed frame of at most 1 MiB from r.
func readFrame(t testing.TB, r io.Reader) []byte {
	t.Helper()
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		t.Fatalf("raw read: %v", err)
	}
	n := int(hdr[0])<<24 | int(hdr[1])<<16 | int(hdr[2])<<8 | int(hdr[3])
	if n > 1<<20 {
		t.Fatalf("raw read: frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("raw read: %v", err)
	}
	return b
}

// gateTool wraps c.Handler so that each call of the test tool named tool
// reports on started when its handler runs and then, if release is not nil,
// waits for release to close (or the call to end) before doing its work.
// Tests wait on started instead of sleeping for a call to be in flight.
func gateTool(c *flow.ServerConfig, tool string, release <-chan struct{}) <-chan struct{} {
	started := make(chan struct{}, 64)
	inner := c.Handler
	c.Handler = flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		var p struct{ Name string }
		if req.Method == "tools/call" && json.Unmarshal(req.Params, &p) == nil && p.Name == tool {
			started <- struct{}{}
			if release != nil {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				}
			}
		}
		return inner.HandleRequest(ctx, req)
	})
	return started
}

// holdStreams is a handler that opens params.n empty execution streams and
// answers at once with their refs, holding the streams open until release
// closes. When one cannot be opened it fails those it opened and answers
// with that error.
func holdStreams(release <-chan struct{}) flow.Handler {
	return flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		var p struct{ N int }
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		var ws []*flow.StreamWriter
		for range p.N {
			w, err := req.OpenStream("application/octet-stream")
			if err != nil {
				for _, w := range ws {
					w.Fail(err)
				}
				return nil, err
			}
			ws = append(ws, w)
		}
		content := make([]any, len(ws))
		for i, w := range ws {
			content[i] = w.Ref()
		}
		go func() {
			<-release
			for _, w := range ws {
				_ = w.Close()
			}
		}()
		return map[string]any{"content": content}, nil
	})
}
