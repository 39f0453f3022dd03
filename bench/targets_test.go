package bench

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bench/sdkfixture"
	"github.com/mcp-flow/mcp-flow/bench/workload"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// An mcpTarget is an MCP client connected to a server over one transport
// (workload.Target, the targets of `mcp-flow bench` too).
type mcpTarget = workload.Target

var quiet = flowtest.Quiet

var benchCert = flowtest.Cert

func pinnedTLS() *tls.Config {
	c, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{benchCert.Hash()}})
	return c
}

// flowServer runs mcp-flow-server's tools in process on loopback.
func flowServer(b testing.TB) *flow.Server {
	return flowtest.Serve(b, flow.ServerConfig{Logger: quiet, Limits: flow.Limits{MaxSessions: 4096, MaxRequestsInFlight: 1024}})
}

type flowTarget struct{ s *flow.Session }

func dialFlow(b testing.TB, srv *flow.Server, enc codec.Name) *flowTarget {
	return dialFlowLimits(b, srv, enc, flow.Limits{})
}

// dialFlowLimits dials with the client limits lim (a stream receive
// window, say).
func dialFlowLimits(b testing.TB, srv *flow.Server, enc codec.Name, lim flow.Limits) *flowTarget {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: pinnedTLS(), Encodings: []codec.Name{enc}, Logger: quiet, Limits: lim})
	if err != nil {
		b.Fatal(err)
	}
	return &flowTarget{s}
}

// w is t as the workload's target, which every method is: the default
// Calls (generate bytes=N, echo text=…).
func (t *flowTarget) w() *workload.Flow { return &workload.Flow{Session: t.s} }

func (t *flowTarget) Ping(ctx context.Context) error              { return t.w().Ping(ctx) }
func (t *flowTarget) Echo(ctx context.Context, text string) error { return t.w().Echo(ctx, text) }
func (t *flowTarget) Fetch(ctx context.Context, n int64) (int64, error) {
	return t.w().Fetch(ctx, n)
}
func (t *flowTarget) Close() { t.s.Close() }

// sdkTarget is a go-sdk client session.
type sdkTarget struct {
	cs  *mcp.ClientSession
	pid int // the server subprocess, for CPU accounting (0: in process)
}

// w is t as the workload's target (the fixture's generate: inline base64).
func (t *sdkTarget) w() *workload.SDK { return &workload.SDK{Session: t.cs} }

func (t *sdkTarget) Ping(ctx context.Context) error              { return t.w().Ping(ctx) }
func (t *sdkTarget) Echo(ctx context.Context, text string) error { return t.w().Echo(ctx, text) }
func (t *sdkTarget) Fetch(ctx context.Context, n int64) (int64, error) {
	return t.w().Fetch(ctx, n)
}
func (t *sdkTarget) Close() { t.cs.Close() }

var (
	fixtureOnce sync.Once
	fixturePath string
	fixtureErr  error
)

// sdkFixture builds the go-sdk stdio server once.
func sdkFixture(b testing.TB) string {
	fixtureOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-flow-bench")
		if err != nil {
			fixtureErr = err
			return
		}
		fixturePath = filepath.Join(dir, "sdk-fixture")
		out, err := exec.Command("go", "build", "-o", fixturePath, "github.com/mcp-flow/mcp-flow/bench/sdkfixture/cmd/sdk-fixture").CombinedOutput()
		if err != nil {
			fixtureErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if fixtureErr != nil {
		b.Fatal(fixtureErr)
	}
	return fixturePath
}

// dialSDKStdio spawns the go-sdk server and connects over its pipes, without
// the default 16 MiB line cap (CommandTransport has no setting for it).
func dialSDKStdio(b testing.TB) *sdkTarget {
	return dialPipes(b, exec.Command(sdkFixture(b)), func(cmd *exec.Cmd, stdin io.Closer) { stdin.Close(); cmd.Wait() }, nil)
}

// dialPipes starts cmd, an MCP server over stdio, connects a go-sdk client
// over its pipes with no line cap (a large result is one line), and has stop
// end it with the benchmark (given the process and its stdin).
func dialPipes(b testing.TB, cmd *exec.Cmd, stop func(*exec.Cmd, io.Closer), opts *mcp.ClientSessionOptions) *sdkTarget {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stop(cmd, stdin) })
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: -1}, opts)
	if err != nil {
		b.Fatalf("%s over stdio: %v; stderr:\n%s", cmd.Path, err, cmd.Stderr)
	}
	return &sdkTarget{cs: cs, pid: cmd.Process.Pid}
}

// sdkHTTPClient is the HTTP client of the go-sdk Streamable HTTP targets:
// tuned to reuse connections, and bounded to 64 per host (the largest
// concurrency BenchmarkEcho asks for). Unbounded, an HTTP/1.1 client opens
// one connection for every request outstanding, and the open-loop pings of
// BenchmarkHeadOfLine (500 a second while the transfer holds them up) ran
// this process out of file descriptors.
func sdkHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, MaxConnsPerHost: 64}}
}

// dialSDKHTTP serves the go-sdk server with its Streamable HTTP handler on
// loopback and connects with its client (sdkHTTPClient).
func dialSDKHTTP(b testing.TB) *sdkTarget {
	srv := sdkfixture.NewServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(h)
	b.Cleanup(ts.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: sdkHTTPClient(), DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return &sdkTarget{cs: cs}
}

// ---- the bare stack: echo servers on webtransport-go, quic-go and TCP ----

// A rawConn is one bidirectional byte stream to an echo-or-sink server: the
// first byte of a request says what to do.
//
//	'p' + 63 bytes: the server echoes the 64 bytes (ping-pong)
//	's' + 8-byte n + 4-byte w: the server sends n bytes in writes of w
//	bytes (0: 256 KiB) and closes (throughput)
type rawTarget struct {
	name  string
	open  func() (io.ReadWriteCloser, error) // a new stream
	ping  io.ReadWriteCloser
	close func()
}

func (r *rawTarget) Ping() error {
	var b [64]byte
	b[0] = 'p'
	if _, err := r.ping.Write(b[:]); err != nil {
		return err
	}
	_, err := io.ReadFull(r.ping, b[:])
	return err
}

func (r *rawTarget) Fetch(n int64) (int64, error) { return r.FetchWrites(n, 0) }

// FetchWrites fetches n bytes that the server writes w bytes at a time.
// The reader reads as MCP-Flow's benchmark client does (ioCopyDiscard).
func (r *rawTarget) FetchWrites(n int64, w int) (int64, error) {
	st, err := r.open()
	if err != nil {
		return 0, err
	}
	defer st.Close()
	var req [13]byte
	req[0] = 's'
	binary.BigEndian.PutUint64(req[1:], uint64(n))
	binary.BigEndian.PutUint32(req[9:], uint32(w))
	if _, err := st.Write(req[:]); err != nil {
		return 0, err
	}
	return ioCopyDiscard(st)
}

// serveRaw answers one stream.
func serveRaw(st io.ReadWriteCloser, closeWrite func()) {
	defer st.Close()
	var b [64]byte
	for {
		if _, err := io.ReadFull(st, b[:1]); err != nil {
			return
		}
		switch b[0] {
		case 'p':
			if _, err := io.ReadFull(st, b[1:]); err != nil {
				return
			}
			if _, err := st.Write(b[:]); err != nil {
				return
			}
		case 's':
			if _, err := io.ReadFull(st, b[1:13]); err != nil {
				return
			}
			w := int(binary.BigEndian.Uint32(b[9:13]))
			if w == 0 {
				w = 256 << 10
			}
			buf := make([]byte, w)
			_, _ = io.CopyBuffer(struct{ io.Writer }{st}, struct{ io.Reader }{demotools.Generate(int64(binary.BigEndian.Uint64(b[1:9])))}, buf)
			closeWrite()
			return
		}
	}
}

func rawTCP(b testing.TB) *rawTarget {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveRaw(c, func() { c.(*net.TCPConn).CloseWrite() })
		}
	}()
	open := func() (io.ReadWriteCloser, error) { return net.Dial("tcp", ln.Addr().String()) }
	p, err := open()
	if err != nil {
		b.Fatal(err)
	}
	return &rawTarget{name: "tcp", open: open, ping: p, close: func() { p.Close(); ln.Close() }}
}

func quicConf() *quic.Config {
	return &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true, MaxIncomingStreams: 1000}
}

func rawQUIC(b testing.TB) *rawTarget {
	tlsConf := certs.ServerTLSConfig(benchCert)
	tlsConf.NextProtos = []string{"bench"}
	ln, err := quic.ListenAddr("127.0.0.1:0", tlsConf, quicConf())
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				for {
					st, err := c.AcceptStream(context.Background())
					if err != nil {
						return
					}
					go serveRaw(st, func() { st.Close() })
				}
			}()
		}
	}()
	ct := pinnedTLS()
	ct.NextProtos = []string{"bench"}
	conn, err := quic.DialAddr(context.Background(), ln.Addr().String(), ct, quicConf())
	if err != nil {
		b.Fatal(err)
	}
	open := func() (io.ReadWriteCloser, error) { return conn.OpenStreamSync(context.Background()) }
	p, err := open()
	if err != nil {
		b.Fatal(err)
	}
	return &rawTarget{name: "quic", open: open, ping: p, close: func() { conn.CloseWithError(0, ""); ln.Close() }}
}

// wtStream adapts a webtransport stream whose Close only ends our side.
type wtStream struct{ *webtransport.Stream }

func rawWT(b testing.TB) *rawTarget {
	url, stop := rawWTServe(b)
	return rawWTDial(b, url, stop, quicConf())
}

// rawWTServe serves the bare stack's echo-or-sink on webtransport-go at
// url's /raw, in this process, until stop.
func rawWTServe(b testing.TB) (url string, stop func()) {
	return wtServe(b, certs.ServerTLSConfig(benchCert), "/raw", func(_ context.Context, _ *webtransport.Session, st *webtransport.Stream) {
		serveRaw(st, func() { st.Close() })
	})
}

// wtServe serves bare webtransport-go sessions at path on 127.0.0.1 with
// tlsConf, calling serve in a goroutine of its own for each bidirectional
// stream a session's peer opens (ctx: the CONNECT request's), until stop.
func wtServe(b testing.TB, tlsConf *tls.Config, path string, serve func(ctx context.Context, s *webtransport.Session, st *webtransport.Stream)) (url string, stop func()) {
	h3 := &http3.Server{TLSConfig: http3.ConfigureTLSConfig(tlsConf), QUICConfig: quicConf()}
	webtransport.ConfigureHTTP3Server(h3)
	ws := &webtransport.Server{H3: h3, CheckOrigin: func(*http.Request) bool { return true }}
	mux := http.NewServeMux()
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		s, err := ws.Upgrade(w, r)
		if err != nil {
			return
		}
		for {
			st, err := s.AcceptStream(context.Background())
			if err != nil {
				return
			}
			go serve(r.Context(), s, st)
		}
	})
	h3.Handler = mux
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go ws.Serve(pc)
	return "https://" + pc.LocalAddr().String() + path, func() { ws.Close(); pc.Close() }
}

// rawWTDial dials the bare server at url (rawWTServe) with qc and opens
// its ping stream; its close closes the session, then calls stop.
func rawWTDial(b testing.TB, url string, stop func(), qc *quic.Config) *rawTarget {
	tr := &webtransport.Transport{TLSClientConfig: pinnedTLS(), QUICConfig: qc}
	_, sess, err := tr.Dial(context.Background(), url, nil)
	if err != nil {
		b.Fatal(err)
	}
	open := func() (io.ReadWriteCloser, error) { return sess.OpenStreamSync(context.Background()) }
	p, err := open()
	if err != nil {
		b.Fatal(err)
	}
	return &rawTarget{name: "webtransport", open: open, ping: p, close: func() { sess.CloseWithError(0, ""); stop() }}
}
