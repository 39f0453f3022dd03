// Over 400 lines: TestParseCost's rig (one host, server and upstream per
// path, a writer that records without allocating) and its table of bounds,
// one per path and direction.

package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// countMarker is in every result TestParseKeepsOrder checks.
const countMarker = "parse-count-marker"

// countedResult is the result of the tool TestParseKeepsOrder calls,
// marshalled by the server (members in this order, none in alphabetical
// order).
type countedResult struct {
	Zeta    string          `json:"zeta"`
	Content []any           `json:"content"`
	Meta    json.RawMessage `json:"_meta"`
	IsError bool            `json:"isError"`
}

// countRig is a host on the stdio front (in process), an MCP-Flow server
// on loopback, and what the server's handler saw.
type countRig struct {
	t      *testing.T
	in     io.WriteCloser
	out    *bufio.Reader
	params chan string // the params of each tools/call, as the server got them
}

const countPayload = "<ストリーム & \"text\">"

func newCountRig(t *testing.T, srvCfg flow.ServerConfig, enc codec.Name) *countRig {
	r := &countRig{t: t, params: make(chan string, 8)}
	if srvCfg.Handler == nil {
		srvCfg.Handler = flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
			if req.Method != "tools/call" {
				return nil, fmt.Errorf("unexpected %s", req.Method)
			}
			r.params <- string(req.Params)
			ref, err := req.StreamFrom(strings.NewReader(countPayload), "text/plain; charset=utf-8")
			if err != nil {
				return nil, err
			}
			return countedResult{
				Zeta:    countMarker,
				Content: []any{json.RawMessage(`{"type":"text","text":"first","_meta":{"z":1,"a":2}}`), ref},
				Meta:    json.RawMessage(`{"z":true,"a":{"y":null,"b":[2,1]}}`),
			}, nil
		})
	}
	srvCfg.Logger = flowtest.Quiet
	srv := flowtest.Serve(t, srvCfg)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r.in, r.out = inW, bufio.NewReaderSize(outR, 4<<20) // room for a line of TestParseCost
	b := bridge.NewStdio(bridge.StdioConfig{URL: srv.URL(), Logger: flowtest.Quiet,
		Client: flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet, Encodings: []codec.Name{enc}}})
	done := make(chan error, 1)
	go func() {
		err := b.Run(context.Background(), inR, outW)
		outW.Close()
		done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("the stdio front did not end 20 s after its input")
		}
	})
	return r
}

func (r *countRig) send(msg string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, msg+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// read returns the host's next message that is not a notification.
func (r *countRig) read() string { return string(r.readSlice()) }

// readSlice returns the host's next message that is not a notification,
// without its newline, in the rig's buffer: valid until the next read, and
// nothing is allocated for it.
func (r *countRig) readSlice() []byte {
	r.t.Helper()
	type line struct {
		b   []byte
		err error
	}
	ch := make(chan line, 1)
	go func() {
		for {
			b, err := r.out.ReadSlice('\n')
			if err != nil || !bytes.Contains(b, []byte(`"method":"notifications/`)) {
				ch <- line{bytes.TrimSuffix(b, []byte("\n")), err}
				return
			}
		}
	}()
	select {
	case l := <-ch:
		if l.err != nil {
			r.t.Fatal(l.err)
		}
		return l.b
	case <-time.After(20 * time.Second):
		r.t.Fatal("no answer from the stdio front within 20 s")
	}
	return nil
}

// within returns what ch gives within 20 s.
func within(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: nothing within 20 s", what)
	}
	return ""
}

// The host's tools/call params of each era: members in no alphabetical
// order, _meta before arguments in 2026-07-28.
const (
	params2025 = `{"name":"counted","arguments":{"z":1,"a":2},"_meta":{"zz":1,"progressToken":"p1","aa":{"y":2,"b":1}}}`
	params2026 = `{"name":"counted","_meta":{"zz":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"roots":{},"elicitation":{}},"aa":2},"arguments":{"z":1,"a":2}}`
)

// TestParseKeepsOrder: a tools/call whose result carries a ref/stream goes
// from a host on the stdio front to an MCP-Flow server and back, in both
// eras and in JSON and CBOR; the result, its _meta and the request's _meta
// keep their members in order, through a 2025 upstream too (resultType
// inserted last). What the path costs is TestParseCost's. See
// docs/design.md, "How a message flows".
func TestParseKeepsOrder(t *testing.T) {
	wantResult := `{"zeta":"` + countMarker + `","content":[{"type":"text","text":"first","_meta":{"z":1,"a":2}},` +
		`{"type":"text","text":"<ストリーム & \"text\">"}],"_meta":{"z":true,"a":{"y":null,"b":[2,1]}},"isError":false}`
	for _, enc := range []codec.Name{codec.JSON, codec.CBOR} {
		t.Run("2025/"+string(enc), func(t *testing.T) {
			r := newCountRig(t, flow.ServerConfig{}, enc)
			r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
			if got := r.read(); !strings.Contains(got, `"protocolVersion"`) {
				t.Fatalf("initialize: %s", got)
			}
			r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params2025 + `}`)
			if got := within(t, r.params, "params at the server"); got != params2025 {
				t.Errorf("params at the server:\n got %s\nwant %s", got, params2025)
			}
			want := `{"jsonrpc":"2.0","id":1,"result":` + wantResult + `}`
			if got := r.read(); got != want {
				t.Errorf("host got:\n%s\nwant:\n%s", got, want)
			}
		})
		t.Run("2026/"+string(enc), func(t *testing.T) {
			r := newCountRig(t, flow.ServerConfig{}, enc)
			r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params2026 + `}`)
			if got := within(t, r.params, "params at the server"); got != params2026 {
				t.Errorf("params at the server:\n got %s\nwant %s", got, params2026)
			}
			want := `{"jsonrpc":"2.0","id":1,"result":` + strings.TrimSuffix(wantResult, "}") + `,"resultType":"complete"}}`
			if got := r.read(); got != want {
				t.Errorf("host got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
	t.Run("2026-to-2025-upstream", func(t *testing.T) {
		big := strings.Repeat("é", 4<<10)
		upResult := `{"zeta":"` + countMarker + `","content":[{"type":"text","_meta":{"b":1,"a":2},"text":"` + big +
			`","annotations":{"priority":0.5}},{"type":"text","text":"kept","y":0}],"isError":false,"alpha":[]}`
		upParams := make(chan string, 1)
		cfg := flow.ServerConfig{}
		bridge.NewPipeUpstream(legacyUpstream(upResult, upParams), 1024, flowtest.Quiet).Configure(&cfg)
		r := newCountRig(t, cfg, codec.JSON)
		r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params2026 + `}`)
		wantUp := `{"name":"counted","_meta":{"zz":1,"aa":2},"arguments":{"z":1,"a":2}}`
		if got := within(t, upParams, "params at the 2025 upstream"); got != wantUp {
			t.Errorf("params at the 2025 upstream:\n got %s\nwant %s", got, wantUp)
		}
		want := `{"jsonrpc":"2.0","id":1,"result":` + strings.TrimSuffix(upResult, "}") + `,"resultType":"complete"}}`
		if got := r.read(); got != want {
			t.Errorf("host got:\n%.600s\nwant:\n%.600s", got, want)
		}
	})
}

// legacyUpstream is an in-process stdio MCP server of the 2025 era: it
// refuses server/discover (-32601), answers initialize, and answers each
// tools/call with result as written, sending its params to params.
func legacyUpstream(result string, params chan<- string) func(context.Context) (io.WriteCloser, io.Reader, func(), error) {
	return pipeServer(func(m pipeMessage) (string, bool) {
		switch m.Method {
		case "server/discover":
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no such method"}}`, m.ID), false
		case "initialize":
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}}`, m.ID), false
		case "tools/call":
			select {
			case params <- string(m.Params):
			default:
			}
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result), false
		}
		return "", false
	})
}

// What a message costs on its way through a front, measured from outside
// the code (TestParseCost): the bytes the process allocates for one round
// trip, all goroutines counted (runtime.MemStats.TotalAlloc). Parsing or
// copying a 1 MiB message once more costs 1 MiB more, whoever does it and
// whatever it reports: the bounds below are what the path costs now and
// less than one such pass more.

// bigN is the size of the large part of each measured message: 1 MiB, so
// that one more decode or copy of it stands out of the path's fixed costs.
// Under the race detector, where the counts are only logged and the test
// looks for races and checks the answers, 128 KiB (still past the 64 KiB
// that moves content to a stream): 1 MiB took 12 s there alone, about 40 s
// in a pair of suites.
var bigN = map[bool]int{false: 1 << 20, true: 128 << 10}[raceEnabled]

// bigText is bigN bytes of plain text (no JSON escape: its JSON string is
// bigN+2 bytes).
var bigText = strings.Repeat("abcdefghijklmnopqrstuvwxyz0123456789 ", bigN/37+1)[:bigN]

// costStream is the payload of the measured result's execution stream.
const costStream = "the stream's payload"

// costHandler serves two tools: "big-result" answers with a 1 MiB text
// block and a ref/stream block (costStream), "big-request" takes 1 MiB of
// arguments and answers a small result.
func costHandler() flow.Handler {
	block := json.RawMessage(`{"type":"text","text":"` + bigText + `"}`)
	small := json.RawMessage(smallResult)
	type result struct {
		Content []any `json:"content"`
		IsError bool  `json:"isError"`
	}
	return flow.HandlerFunc(func(ctx context.Context, req *flow.Request) (any, error) {
		switch {
		case req.Method != "tools/call":
			return nil, fmt.Errorf("unexpected %s", req.Method)
		case bytes.Contains(req.Params[:min(len(req.Params), 300)], []byte(`"name":"big-result"`)):
			ref, err := req.StreamFrom(strings.NewReader(costStream), "text/plain; charset=utf-8")
			if err != nil {
				return nil, err
			}
			return result{Content: []any{block, ref}}, nil
		case len(req.Params) < bigN:
			return nil, errors.New("the big request's params arrived cut")
		}
		return small, nil
	})
}

// The measured messages: the host's requests (id 7, which each round trip
// reuses) and the results it gets.
const (
	bigResultParams = `{"name":"big-result","arguments":{}}`
	smallResult     = `{"content":[{"type":"text","text":"ok"}],"isError":false}`
	meta2026        = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},`
)

var (
	bigRequestParams = `{"name":"big-request","arguments":{"text":"` + bigText + `"}}`
	bigResult        = `{"content":[{"type":"text","text":"` + bigText + `"},{"type":"text","text":"` + costStream + `"}],"isError":false}`
)

// call7 is the host's tools/call with params.
func call7(params string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + params + `}`)
}

// answer7 is the response to call7 with result.
func answer7(result string) []byte { return []byte(`{"jsonrpc":"2.0","id":7,"result":` + result + `}`) }

// in2026 returns a request's params and its result as they are in
// 2026-07-28: _meta with the revision's members, resultType last.
func in2026(params, result string) (string, string) {
	return `{` + meta2026 + params[1:], strings.TrimSuffix(result, "}") + `,"resultType":"complete"}`
}

// perMessage returns the fewest bytes the process allocated (every
// goroutine: runtime.MemStats.TotalAlloc) in one of rounds calls of
// roundTrip, after one to warm up. The host, the front, the MCP-Flow
// client and server all run in this process; what else runs meanwhile (a
// GC that empties a pool, a QUIC acknowledgement or retransmission) only
// adds, so the fewest is the path's own cost.
func perMessage(rounds int, roundTrip func()) uint64 {
	roundTrip()
	best := ^uint64(0)
	var a, b runtime.MemStats
	for range rounds {
		runtime.ReadMemStats(&a)
		roundTrip()
		runtime.ReadMemStats(&b)
		best = min(best, b.TotalAlloc-a.TotalAlloc)
	}
	return best
}

// costCase is one measured message: the host's request and the answer it
// must get, the bound in units of size (the request's bytes and the
// answer's, as the host writes and reads them), and what was measured.
type costCase struct {
	name            string
	request, answer []byte
	bound           float64
}

// check measures c with roundTrip, which must leave the host's answer in
// *got, and requires the answer and the bound: allocated <= bound x size
// + 64 KiB.
func (c costCase) check(t *testing.T, got *[]byte, roundTrip func()) {
	t.Helper()
	runs := 5
	if raceEnabled {
		runs = 1 // the count is only logged (below), the answer still checked
	}
	n := perMessage(runs, roundTrip)
	if !bytes.Equal(*got, c.answer) {
		t.Errorf("%s: the host got %.200s… (%d bytes), want %.200s… (%d bytes)", c.name, *got, len(*got), c.answer, len(c.answer))
	}
	size := len(c.request) + len(c.answer)
	limit := uint64(c.bound*float64(size)) + 64<<10
	ratio := float64(n) / float64(size)
	t.Logf("%-28s %8d bytes allocated for a %d-byte round trip: %.2f x (bound %.2f x + 64 KiB)", c.name, n, size, ratio, c.bound)
	if raceEnabled {
		return // the race detector allocates for itself, and drops what sync.Pools are given at random
	}
	if n > limit {
		t.Errorf("%s: %d bytes allocated for a %d-byte round trip (%.2f x), over the bound %.2f x + 64 KiB = %d: one more decode or copy of the message on its way?",
			c.name, n, size, ratio, c.bound, limit)
	}
}

// costUpstream is an in-process stdio MCP server of the 2025 era (for
// NewPipeUpstream) that answers each tools/call with result, writing its
// line from a buffer it reuses: it allocates next to nothing per call.
func costUpstream(result string) func(context.Context) (io.WriteCloser, io.Reader, func(), error) {
	return pipeSessions(func(in io.Reader, out io.WriteCloser) {
		br := bufio.NewReader(in)
		var line []byte
		for {
			req, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			var m pipeMessage
			if json.Unmarshal(req, &m) != nil || m.ID == nil {
				continue
			}
			line = append(append(line[:0], `{"jsonrpc":"2.0","id":`...), m.ID...)
			switch m.Method {
			case "initialize":
				line = append(line, `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"cost","version":"1"}}}`...)
			case "tools/call":
				line = append(append(append(line, `,"result":`...), result...), '}')
			default:
				line = append(line, `,"error":{"code":-32601,"message":"no such method"}}`...)
			}
			if _, err := out.Write(append(line, '\n')); err != nil {
				return
			}
		}
	})
}

// TestParseCost: one message through each front, a 1 MiB result (with an
// execution stream to inline) and a 1 MiB request, costs no more bytes
// allocated than the bound (the measured cost and less than one pass over
// the message more); the host gets each answer whole. See docs/design.md,
// "How a message flows". Measured (linux/amd64, in units of the round
// trip's size; the same to 0.05 from run to run), and the bounds:
//
//	path                                   result        request
//	stdio, JSON                            6.13 (6.6)    5.88 (6.3)
//	stdio, CBOR                            7.66 (8.1)    7.41 (7.8)
//	stdio, a 2025 upstream behind (JSON)   6.31 (6.8)    -
//	HTTP 2025-11-25, SSE (CBOR)            7.94 (8.4)    6.38 (6.8)
//	HTTP 2026-07-28, JSON body (CBOR)      8.66 (9.1)    7.41 (7.8)
func TestParseCost(t *testing.T) {
	if raceEnabled {
		// Under the race detector the allocations are only logged (check),
		// so the test may run beside others; without it (make test's
		// allocation run) it runs alone, its counts its own.
		t.Parallel()
	}
	stdio := func(t *testing.T, r *countRig, cases ...costCase) {
		for _, c := range cases {
			line := append(c.request, '\n')
			var got []byte
			c.check(t, &got, func() {
				if _, err := r.in.Write(line); err != nil {
					t.Fatal(err)
				}
				got = r.readSlice()
			})
		}
	}
	init2025 := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`
	bounds := map[codec.Name][2]float64{codec.JSON: {6.6, 6.3}, codec.CBOR: {8.1, 7.8}}
	for _, enc := range []codec.Name{codec.JSON, codec.CBOR} {
		t.Run("stdio/"+string(enc), func(t *testing.T) {
			r := newCountRig(t, flow.ServerConfig{Handler: costHandler()}, enc)
			r.send(init2025)
			r.read()
			r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			stdio(t, r,
				costCase{"result", call7(bigResultParams), answer7(bigResult), bounds[enc][0]},
				costCase{"request", call7(bigRequestParams), answer7(smallResult), bounds[enc][1]})
		})
	}
	t.Run("stdio/2025-upstream", func(t *testing.T) {
		// The upstream's 1 MiB text block goes to an execution stream at
		// the server, and the front inlines it back.
		cfg := flow.ServerConfig{}
		bridge.NewPipeUpstream(costUpstream(bigResult), 64<<10, flowtest.Quiet).Configure(&cfg)
		r := newCountRig(t, cfg, codec.JSON)
		r.send(init2025)
		r.read()
		r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		stdio(t, r, costCase{"result", call7(bigResultParams), answer7(bigResult), 6.8})
	})
	t.Run("http", func(t *testing.T) {
		srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet, Handler: costHandler()})
		h := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(), Logger: flowtest.Quiet,
			Client: flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Quiet}}})
		defer h.Close()
		w := &sinkWriter{body: make([]byte, 0, 4<<20)}
		post := func(body []byte, hdr ...string) {
			r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
			r.Header.Set("Accept", "application/json, text/event-stream")
			r.Header.Set("Content-Type", "application/json")
			for i := 0; i < len(hdr); i += 2 {
				r.Header.Set(hdr[i], hdr[i+1])
			}
			w.hdr, w.code, w.body = http.Header{}, 0, w.body[:0]
			h.ServeHTTP(w, r)
		}
		post([]byte(init2025))
		sid := w.hdr.Get("MCP-Session-Id")
		if w.code != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d %s", w.code, w.body)
		}
		post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), "MCP-Session-Id", sid, "MCP-Protocol-Version", "2025-11-25")
		// A 2025-11-25 POST is answered on an SSE stream: the answer is the
		// data of its last event.
		var got []byte
		for _, c := range []costCase{
			{"2025 SSE result", call7(bigResultParams), answer7(bigResult), 8.4},
			{"2025 SSE request", call7(bigRequestParams), answer7(smallResult), 6.8},
		} {
			c.check(t, &got, func() {
				post(c.request, "MCP-Session-Id", sid, "MCP-Protocol-Version", "2025-11-25")
				_, got, _ = bytes.Cut(bytes.TrimSuffix(w.body[bytes.LastIndex(w.body, []byte("\nid: "))+1:], []byte("\n\n")), []byte("\ndata: "))
			})
		}
		for _, c := range []struct {
			name, params, result string
			bound                float64
		}{{"2026 JSON result", bigResultParams, bigResult, 9.1}, {"2026 JSON request", bigRequestParams, smallResult, 7.8}} {
			params, result := in2026(c.params, c.result)
			tool, _, _ := strings.Cut(strings.TrimPrefix(c.params, `{"name":"`), `"`)
			costCase{c.name, call7(params), answer7(result), c.bound}.check(t, &w.body, func() {
				post(call7(params), "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", tool)
			})
		}
	})
}

// sinkWriter is an http.ResponseWriter that keeps what is written in a
// buffer made once: nothing is allocated for what a measured message
// writes.
type sinkWriter struct {
	hdr  http.Header
	code int
	body []byte
}

func (w *sinkWriter) Header() http.Header { return w.hdr }

func (w *sinkWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *sinkWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}

// Flush lets the SSE stream flush its events (to w.body).
func (w *sinkWriter) Flush() {}
