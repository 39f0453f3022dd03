package flow_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/quic-go/webtransport-go"
)

func TestNegotiationEachEncoding(t *testing.T) {
	srv := startServer(t, nil)
	for _, tc := range []struct {
		offer []codec.Name
		want  codec.Name
	}{
		{[]codec.Name{codec.JSON}, codec.JSON},
		{[]codec.Name{codec.CBOR, codec.JSON}, codec.CBOR},
		{[]codec.Name{codec.Protobuf}, codec.Protobuf},
		{[]codec.Name{"x-unknown", codec.Protobuf, codec.CBOR}, codec.Protobuf},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			s := dial(t, srv, func(c *flow.ClientConfig) { c.Encodings = tc.offer })
			if got := s.Encoding(); got != tc.want {
				t.Fatalf("encoding = %s, want %s", got, tc.want)
			}
			if got := s.InitializeResult().Transport.Encoding; got != tc.want {
				t.Fatalf("transport.encoding = %s", got)
			}
			if err := s.Ping(context.Background()); err != nil {
				t.Fatal(err)
			}
			r := callTool(t, s, "echo", map[string]string{"text": "héllo 日本 🎉"})
			if got := textOf(t, r); got != "héllo 日本 🎉" {
				t.Fatalf("echo = %q", got)
			}
			ctx := context.Background()
			list, err := s.Call(ctx, "tools/list", nil)
			if err != nil {
				t.Fatal(err)
			}
			var tl struct{ Tools []struct{ Name string } }
			if err := json.Unmarshal(list.Result, &tl); err != nil || len(tl.Tools) < 5 {
				t.Fatalf("tools/list: %v %s", err, list.Result)
			}
		})
	}
}

func TestNegotiationNoneNamedAndUnknownType(t *testing.T) {
	srv := startServer(t, nil)
	// A client that names no encodings gets json.
	p, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.write(frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"},"transport":{"type":"mcp-flow","version":"0.1"}}}`))
	var res struct {
		Result flow.InitializeResult
	}
	if err := json.Unmarshal(p.read(), &res); err != nil || res.Result.Transport.Encoding != codec.JSON || res.Result.Transport.Type != "mcp-flow" {
		t.Fatalf("initialize without encodings: %v %+v", err, res.Result.Transport)
	}
	if res.Result.Transport.MaxFrameSize == 0 || res.Result.Transport.MaxConcurrentStreams == 0 {
		t.Fatalf("transport capabilities incomplete: %+v", res.Result.Transport)
	}
	// An unknown transport type is -32600.
	q, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	q.write(frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"},"transport":{"type":"websocket"}}}`))
	expectError(t, q.read(), `1`, jsonrpc.CodeInvalidRequest)
}

func frame(s string) []byte {
	b := []byte{byte(len(s) >> 24), byte(len(s) >> 16), byte(len(s) >> 8), byte(len(s))}
	return append(b, s...)
}

func expectError(t *testing.T, b []byte, id string, code jsonrpc.Code) {
	t.Helper()
	var r struct {
		ID    json.RawMessage
		Error *jsonrpc.Error
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Error == nil {
		t.Fatalf("want error %d, got %s", code, b)
	}
	if string(r.ID) != id || r.Error.Code != code {
		t.Fatalf("want id %s code %d, got %s", id, code, b)
	}
}

func TestLargeStreamWithPing(t *testing.T) {
	size := int64(1 << 30)
	if raceEnabled || testing.Short() {
		// The race detector slows QUIC ~10×: 128 MiB took 45 s in make
		// test's race run; 32 MiB is still over a hundred pings' worth of
		// transfer, and the throughput is make bench's (BenchmarkLarge).
		size = 32 << 20
	}
	srv := startServer(t, nil)
	s := dial(t, srv, func(c *flow.ClientConfig) { c.Encodings = []codec.Name{codec.CBOR} })
	r := callTool(t, s, "generate", map[string]any{"bytes": size})
	if len(r.Refs) != 1 || r.Refs[0].Type != "ref/stream" || r.Refs[0].MimeType != "application/octet-stream" {
		t.Fatalf("refs = %+v", r.Refs)
	}
	sr, err := r.Stream(context.Background(), r.Refs[0].StreamTag)
	if err != nil {
		t.Fatal(err)
	}
	// Ping while the stream flows: the control stream is never blocked.
	var pings []time.Duration
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			t0 := time.Now()
			if err := s.Ping(context.Background()); err != nil {
				t.Errorf("ping during transfer: %v", err)
				return
			}
			pings = append(pings, time.Since(t0))
		}
	})
	t0 := time.Now()
	h := sha256.New()
	n, err := io.Copy(h, sr)
	elapsed := time.Since(t0)
	close(stop)
	wg.Wait()
	if err != nil || n != size {
		t.Fatalf("read %d of %d bytes: %v", n, size, err)
	}
	if got, want := hex.EncodeToString(h.Sum(nil)), demotools.GenerateSHA256(size); got != want {
		t.Fatalf("sha256 = %s, want %s", got, want)
	}
	if len(pings) == 0 {
		t.Fatal("no ping completed during the transfer")
	}
	slices.Sort(pings)
	t.Logf("%d MiB in %v (%.0f MB/s); %d pings during it: p50 %v, p99 %v, max %v", size>>20, elapsed.Round(time.Millisecond),
		float64(size)/elapsed.Seconds()/1e6, len(pings), pings[len(pings)/2], pings[len(pings)*99/100], pings[len(pings)-1])
}

func TestReadFileUnderRoot(t *testing.T) {
	root := t.TempDir()
	content := []byte("line one\nline two — 二行目\n")
	if err := os.WriteFile(filepath.Join(root, "a.txt"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(root), "secret.txt"), []byte("no"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServerTools(t, demotools.Config{Root: root}, nil)
	s := dial(t, srv, nil)
	r := callTool(t, s, "read_file", map[string]string{"path": "a.txt"})
	sr, err := r.Stream(context.Background(), r.Refs[0].StreamTag)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(sr)
	if err != nil || string(got) != string(content) || r.Refs[0].MimeType != "text/plain; charset=utf-8" {
		t.Fatalf("read_file = %q (%s), %v", got, r.Refs[0].MimeType, err)
	}
	for _, escape := range []string{"../secret.txt", "/etc/passwd", "a/../../secret.txt"} {
		r := callTool(t, s, "read_file", map[string]string{"path": escape})
		var res struct{ IsError bool }
		json.Unmarshal(r.Result, &res)
		if !res.IsError || len(r.Refs) != 0 {
			t.Fatalf("read_file %q escaped the root: %s", escape, r.Result)
		}
	}
}

func TestFailMidstreamIsNeverComplete(t *testing.T) {
	srv := startServer(t, nil)
	s := dial(t, srv, nil)
	r := callTool(t, s, "fail_midstream", map[string]any{"bytes": 3 << 20})
	sr, err := r.Stream(context.Background(), r.Refs[0].StreamTag)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, sr)
	var se *flow.StreamError
	if !errors.As(err, &se) || se.Code != jsonrpc.CodeInternalError {
		t.Fatalf("after %d bytes: err = %v, want a *StreamError with -32603", n, err)
	}
	if se.Reason != demotools.ErrMidstream.Error() {
		t.Fatalf("reason = %q, want the $/streamError text", se.Reason)
	}
	if n > 3<<20 {
		t.Fatalf("read %d bytes, more than were sent", n)
	}
	// The session carries on.
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestCancel(t *testing.T) {
	srv := startServer(t, nil)
	s := dial(t, srv, nil)
	var progress atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 1000, "delayMs": 10}},
			flow.WithProgress(func(p flow.Progress) {
				if progress.Add(1) == 3 {
					cancel()
				}
			}))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Call = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not end the call")
	}
	// The server answers the $/cancel with -32800; over a raw peer we see it.
	p := initRaw(t, srv)
	p.write(frame(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"slow","arguments":{"steps":1000,"delayMs":10}}}`))
	// The ping's answer shows the server has read request 99.
	p.write(frame(`{"jsonrpc":"2.0","id":98,"method":"ping"}`))
	if got := string(p.read()); got != `{"jsonrpc":"2.0","id":98,"result":{}}` {
		t.Fatalf("ping behind request 99: %s", got)
	}
	p.write(frame(`{"jsonrpc":"2.0","method":"$/cancel","params":{"requestId":99,"reason":"User pressed Escape"}}`))
	expectError(t, p.read(), `99`, jsonrpc.CodeRequestCancelled)
	// A cancel for a finished request is ignored: the next reply is ping's.
	p.write(frame(`{"jsonrpc":"2.0","method":"$/cancel","params":{"requestId":99}}`))
	p.write(frame(`{"jsonrpc":"2.0","id":100,"method":"ping"}`))
	if got := string(p.read()); got != `{"jsonrpc":"2.0","id":100,"result":{}}` {
		t.Fatalf("after a late cancel: %s", got)
	}
}

func TestCancelResetsStreams(t *testing.T) {
	srv := startServer(t, nil)
	p := initRaw(t, srv)
	// A huge stream that is read slowly, then cancelled.
	p.write(frame(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"generate","arguments":{"bytes":1073741824}}}`))
	reply := p.read()
	if !json.Valid(reply) {
		t.Fatalf("reply %s", reply)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := p.sess.AcceptUniStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if _, err := io.ReadFull(rs, buf); err != nil || fmt.Sprintf("% x", buf) != "00 00 00 07 00 00 00 01" {
		t.Fatalf("stream header % x, %v", buf, err)
	}
	p.write(frame(`{"jsonrpc":"2.0","method":"$/cancel","params":{"requestId":7}}`))
	_, err = io.Copy(io.Discard, rs)
	var we *webtransport.StreamError
	if !errors.As(err, &we) || we.ErrorCode != flow.StreamCode(jsonrpc.CodeRequestCancelled) {
		t.Fatalf("stream error %v, want a reset with code 32800", err)
	}
	// The request had been answered already (its result named the stream),
	// so no second answer comes; the session carries on.
	p.write(frame(`{"jsonrpc":"2.0","id":8,"method":"ping"}`))
	if got := string(p.read()); got != `{"jsonrpc":"2.0","id":8,"result":{}}` {
		t.Fatalf("after cancel: %s", got)
	}
}

// initRaw dials a raw peer and completes initialize in JSON.
func initRaw(t *testing.T, srv *flow.Server) *rawPeer {
	t.Helper()
	p, _, err := dialRaw(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.write(frame(rawInitialize))
	var r struct{ Result *flow.InitializeResult }
	if err := json.Unmarshal(p.read(), &r); err != nil || r.Result == nil {
		t.Fatalf("initialize: %v", err)
	}
	p.write(frame(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	return p
}

// rawInitialize is the initialize request of a raw peer, in JSON.
const rawInitialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"},"transport":{"type":"mcp-flow","version":"0.1","encodings":["json"]}}}`

// TestStreamReceiveWindow: a client that caps its streams' receive window
// (Limits.StreamReceiveWindow, the latency option) still receives a large
// result whole; the benchmark BenchmarkHeadOfLine shows the effect.
func TestStreamReceiveWindow(t *testing.T) {
	srv := startServer(t, nil)
	s := dial(t, srv, func(c *flow.ClientConfig) { c.Limits.StreamReceiveWindow = 64 << 10 })
	const n = 8 << 20
	r := callTool(t, s, "generate", map[string]any{"bytes": n})
	sr, err := r.Stream(context.Background(), r.Refs[0].StreamTag)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if got, err := io.Copy(h, sr); err != nil || got != n {
		t.Fatalf("%d of %d bytes: %v", got, n, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != demotools.GenerateSHA256(n) {
		t.Fatal("sha256 mismatch")
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}
