package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/mcpjson"
)

// countMarker is in every result TestParseCount counts, and in no other.
const countMarker = "parse-count-marker"

// passCounter records the passes over the counted results, by side.
type passCounter struct {
	mu     sync.Mutex
	passes map[string][]string // side → "kind site", in order
}

func (c *passCounter) add(side, site string, k mcpjson.PassKind, result []byte) {
	if !bytes.Contains(result, []byte(countMarker)) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.passes[side] = append(c.passes[side], k.String()+" "+site)
}

func (c *passCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.passes = map[string][]string{}
}

// counts returns, per side, the number of passes of each kind:
// "decode 1, scan 2, encode 0, copy 1".
func (c *passCounter) counts() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for side, ps := range c.passes {
		n := map[string]int{}
		for _, p := range ps {
			kind, _, _ := strings.Cut(p, " ")
			n[kind]++
		}
		out[side] = fmt.Sprintf("decode %d, scan %d, encode %d, copy %d", n["decode"], n["scan"], n["encode"], n["copy"])
	}
	return out
}

// check logs the passes of each side and requires the counts of want.
func (c *passCounter) check(t *testing.T, want map[string]string) {
	t.Helper()
	c.log(t)
	got := c.counts()
	for side, w := range want {
		if got[side] != w {
			t.Errorf("%s: %s, want %s", side, got[side], w)
		}
	}
	for side := range got {
		if _, ok := want[side]; !ok {
			t.Errorf("%s made passes: %s", side, got[side])
		}
	}
}

func (c *passCounter) log(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	sides := make([]string, 0, len(c.passes))
	for side := range c.passes {
		sides = append(sides, side)
	}
	c.mu.Unlock()
	sort.Strings(sides)
	counts := c.counts()
	for _, side := range sides {
		c.mu.Lock()
		ps := slices.Clone(c.passes[side])
		c.mu.Unlock()
		t.Logf("%-8s %s: %s", side, counts[side], strings.Join(ps, "; "))
	}
}

// countedResult is the result of the counted tool, marshalled by the
// server (members in this order, none in alphabetical order).
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
	r.in, r.out = inW, bufio.NewReader(outR)
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
func (r *countRig) read() string {
	r.t.Helper()
	type line struct {
		s   string
		err error
	}
	ch := make(chan line, 1)
	go func() {
		for {
			s, err := r.out.ReadString('\n')
			if err != nil || !strings.Contains(s, `"method":"notifications/`) {
				ch <- line{strings.TrimSuffix(s, "\n"), err}
				return
			}
		}
	}()
	select {
	case l := <-ch:
		if l.err != nil {
			r.t.Fatal(l.err)
		}
		return l.s
	case <-time.After(20 * time.Second):
		r.t.Fatal("no answer from the stdio front within 20 s")
	}
	return ""
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

// TestParseCount: a tools/call whose result carries a ref/stream goes from
// a host on the stdio front to an MCP-Flow server and back, in both eras
// and in JSON and CBOR; the passes over the result are counted on each
// side (mcpjson.Pass), and the result, its _meta and the request's _meta
// keep their members in order, through a 2025 upstream too (resultType
// inserted last). See docs/design.md, "How a message flows".
func TestParseCount(t *testing.T) {
	c := &passCounter{passes: map[string][]string{}}
	defer mcpjson.CountPasses(c.add)()
	wantResult := `{"zeta":"` + countMarker + `","content":[{"type":"text","text":"first","_meta":{"z":1,"a":2}},` +
		`{"type":"text","text":"<ストリーム & \"text\">"}],"_meta":{"z":true,"a":{"y":null,"b":[2,1]}},"isError":false}`
	// What each side does to the result (docs/design.md, "How a message
	// flows"). Before issue 24 the client decoded it 3 times (the codec,
	// then findRefs unmarshalled it whole and each block), the front walked
	// it, decoded each ref/stream block again and copied the result 3 times
	// (splice, envelope, framing), and a 2026-07-28 server decoded it and
	// encoded it once more (resultType through a map, members reordered).
	client := "decode 1, scan 2, encode 0, copy 1" // frame clone; codec limits, codec decode; mcpjson.Refs
	front := "decode 0, scan 0, encode 0, copy 1"  // emitResult: the splice written once, into the frame
	server := map[string]string{                   // jsonrpc.NewResult; mcpjson.WithResultType (2026); codec.Append (a copy in JSON)
		"2025/json": "decode 0, scan 0, encode 1, copy 1", "2026/json": "decode 0, scan 0, encode 1, copy 2",
		"2025/cbor": "decode 0, scan 0, encode 2, copy 0", "2026/cbor": "decode 0, scan 0, encode 2, copy 1",
	}
	for _, enc := range []codec.Name{codec.JSON, codec.CBOR} {
		t.Run("2025/"+string(enc), func(t *testing.T) {
			r := newCountRig(t, flow.ServerConfig{}, enc)
			r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
			if got := r.read(); !strings.Contains(got, `"protocolVersion"`) {
				t.Fatalf("initialize: %s", got)
			}
			r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			c.reset()
			r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params2025 + `}`)
			if got := within(t, r.params, "params at the server"); got != params2025 {
				t.Errorf("params at the server:\n got %s\nwant %s", got, params2025)
			}
			want := `{"jsonrpc":"2.0","id":1,"result":` + wantResult + `}`
			if got := r.read(); got != want {
				t.Errorf("host got:\n%s\nwant:\n%s", got, want)
			}
			c.check(t, map[string]string{"server": server["2025/"+string(enc)], "client": client, "front": front})
		})
		t.Run("2026/"+string(enc), func(t *testing.T) {
			r := newCountRig(t, flow.ServerConfig{}, enc)
			c.reset()
			r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params2026 + `}`)
			if got := within(t, r.params, "params at the server"); got != params2026 {
				t.Errorf("params at the server:\n got %s\nwant %s", got, params2026)
			}
			want := `{"jsonrpc":"2.0","id":1,"result":` + strings.TrimSuffix(wantResult, "}") + `,"resultType":"complete"}}`
			if got := r.read(); got != want {
				t.Errorf("host got:\n%s\nwant:\n%s", got, want)
			}
			c.check(t, map[string]string{"server": server["2026/"+string(enc)], "client": client, "front": front})
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
		c.reset()
		r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params2026 + `}`)
		wantUp := `{"name":"counted","_meta":{"zz":1,"aa":2},"arguments":{"z":1,"a":2}}`
		if got := within(t, upParams, "params at the 2025 upstream"); got != wantUp {
			t.Errorf("params at the 2025 upstream:\n got %s\nwant %s", got, wantUp)
		}
		want := `{"jsonrpc":"2.0","id":1,"result":` + strings.TrimSuffix(upResult, "}") + `,"resultType":"complete"}}`
		if got := r.read(); got != want {
			t.Errorf("host got:\n%.600s\nwant:\n%.600s", got, want)
		}
		// The upstream: its line cloned out of the scanner's buffer, decoded
		// (codec limits, codec decode), its content walked once and the
		// text block moved to a stream (spliced); the server passes its
		// text on (mcpjson.WithResultType, codec.Append).
		c.check(t, map[string]string{"upstream": "decode 1, scan 2, encode 0, copy 2", "server": "decode 0, scan 0, encode 0, copy 2",
			"client": client, "front": front})
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
