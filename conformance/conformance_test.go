package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

func TestOurServerPassesEveryCheck(t *testing.T) {
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	rs := RunServer(context.Background(), Target{URL: srv.URL(), TLS: flowtest.ClientTLS(t)}, ServerChecks(), Options{CheckTimeout: 10 * time.Second})
	if len(rs) != len(ServerChecks()) {
		t.Fatalf("%d results for %d checks", len(rs), len(ServerChecks()))
	}
	for _, r := range rs {
		// datagram.unsupported is the guide's rule for a server that
		// announces datagramsSupported: false (TestOurServerWithoutDatagrams).
		want := Pass
		if r.ID == "datagram.unsupported" {
			want = Skip
		}
		if r.Status != want {
			t.Errorf("%s (%s §%s): %s: %s", r.ID, r.Level, r.Section, r.Status, r.Seen)
		}
	}
	// What init.json saw is the transport object as the server sent it,
	// not Go's rendering of it (a pointer for datagramsSupported).
	if seen := rs[0].Seen; rs[0].ID != "init.json" || !strings.Contains(seen, `"datagramsSupported":true`) {
		t.Errorf("init.json saw %s", seen)
	}
	var table bytes.Buffer
	WriteTable(&table, rs)
	if !strings.Contains(table.String(), fmt.Sprintf("%d passed, 0 failed, 1 skipped", len(ServerChecks())-1)) {
		t.Errorf("table:\n%s", table.String())
	}
}

// TestOurServerWithoutDatagrams: our server announcing datagramsSupported:
// false answers a datagram with -32004, the guide's rule; progress then
// comes on the control stream.
func TestOurServerWithoutDatagrams(t *testing.T) {
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet, DisableDatagrams: true})
	rs := RunServer(context.Background(), Target{URL: srv.URL(), TLS: flowtest.ClientTLS(t)}, ServerChecks(), Options{CheckTimeout: 10 * time.Second,
		Only: map[string]bool{"datagram.unsupported": true, "datagram.opt-out": true, "datagram.progress": true, "datagram.fallback": true}})
	want := map[string]Status{"datagram.unsupported": Pass, "datagram.opt-out": Pass, "datagram.progress": Skip, "datagram.fallback": Pass}
	for _, r := range rs {
		if r.Status != want[r.ID] {
			t.Errorf("%s: %s (%s), want %s", r.ID, r.Status, r.Seen, want[r.ID])
		}
	}
	if len(rs) != len(want) {
		t.Errorf("%d results", len(rs))
	}
}

// wtPeer serves WebTransport at /mcp on 127.0.0.1, accepting any Origin,
// and hands each session to handle. It returns the URL.
func wtPeer(t *testing.T, handle func(*webtransport.Session)) string {
	tlsConf := certs.ServerTLSConfig(flowtest.Cert)
	h3 := &http3.Server{TLSConfig: http3.ConfigureTLSConfig(tlsConf), QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true}}
	webtransport.ConfigureHTTP3Server(h3)
	ws := &webtransport.Server{H3: h3, CheckOrigin: func(*http.Request) bool { return true }}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		s, err := ws.Upgrade(w, r)
		if err != nil {
			return
		}
		handle(s)
	})
	h3.Handler = mux
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ws.Serve(pc)
	t.Cleanup(func() { ws.Close(); pc.Close() })
	return "https://" + pc.LocalAddr().String() + "/mcp"
}

// controlOnlyServer is a third-party MCP-Flow server of the kind the
// published v0.1 examples are: the control stream in JSON and nothing else
// (no encodings, no execution streams, no datagrams, no error codes).
func controlOnlyServer(t *testing.T) string {
	return wtPeer(t, func(s *webtransport.Session) {
		st, err := s.AcceptStream(context.Background())
		if err != nil {
			return
		}
		for {
			var hdr [4]byte
			if _, err := io.ReadFull(st, hdr[:]); err != nil {
				return
			}
			n := binary.BigEndian.Uint32(hdr[:])
			if n > 1<<20 {
				return // a simple server: gives up on the stream
			}
			body := make([]byte, n)
			if _, err := io.ReadFull(st, body); err != nil {
				return
			}
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(body, &req) != nil || req.ID == nil {
				continue // ignores what it does not understand
			}
			var result string
			switch req.Method {
			case "initialize":
				result = `{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"v0.1-example","version":"0.1"},"transport":{"type":"mcp-flow","version":"0.1","encoding":"json"}}`
			case "tools/list":
				result = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
			default:
				result = `{}`
			}
			msg := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`
			out := binary.BigEndian.AppendUint32(nil, uint32(len(msg)))
			st.Write(append(out, msg...))
		}
	})
}

// TestControlStreamOnlyServer: against a server that implements only the
// control stream in JSON, the runner finishes in bounded time, does not
// crash, and says precisely what is missing.
func TestControlStreamOnlyServer(t *testing.T) {
	t.Parallel()
	url := controlOnlyServer(t)
	start := time.Now()
	rs := RunServer(context.Background(), Target{URL: url, TLS: flowtest.ClientTLS(t)}, ServerChecks(), Options{CheckTimeout: 2 * time.Second})
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the run took %v", d)
	}
	byID := map[string]Result{}
	for _, r := range rs {
		byID[r.ID] = r
	}
	want := map[string]Status{
		"negotiate.none":          Pass,
		"negotiate.cbor":          Skip, // it chose json: allowed
		"init.json":               Fail, // no maxConcurrentStreams, datagramsSupported
		"init.max-frame-size":     Fail,
		"negotiate.unknown-type":  Fail,
		"state.before-initialize": Fail,
		"frame.zero-length":       Fail,
		"encoding.mismatch":       Fail,
		"stream.header":           Skip, // no generate tool
		"stream.injection":        Skip, // it never reads client-opened streams: nothing to inject
		"stream.injection-report": Fail,
		"datagram.unsupported":    Skip, // it announces no datagramsSupported (init.json fails that)
		"datagram.opt-out":        Fail,
		"origin":                  Fail,
		"origin.403":              Fail,
		"method.unknown":          Fail,
		"tls.13":                  Pass,
		"limit.streams":           Skip,
	}
	for id, st := range want {
		if got := byID[id]; got.Status != st {
			t.Errorf("%s: %s (%s), want %s", id, got.Status, got.Seen, st)
		}
	}
	if !strings.Contains(byID["init.json"].Seen, "maxConcurrentStreams") {
		t.Errorf("init.json does not say what is missing: %s", byID["init.json"].Seen)
	}
	if !Failed(rs) {
		t.Error("a server failing MUST checks did not fail the run")
	}
	// The expected-failures baseline turns known failures into xfail.
	expected := map[string]bool{}
	for _, r := range rs {
		if r.Status == Fail {
			expected[r.ID] = true
		}
	}
	again := RunServer(context.Background(), Target{URL: url, TLS: flowtest.ClientTLS(t)}, ServerChecks(), Options{CheckTimeout: 2 * time.Second, Expected: expected, Only: map[string]bool{"init.json": true, "negotiate.none": true}})
	if len(again) != 2 || again[0].Status != XFail || Failed(again) {
		t.Errorf("with a baseline: %+v", again)
	}
	var junit bytes.Buffer
	if err := WriteJUnit(&junit, "control-only", rs); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(junit.Bytes(), &parsed); err != nil || parsed.Tests != len(rs) || parsed.Failures == 0 {
		t.Errorf("JUnit: %v %+v", err, parsed)
	}
	var js []Result
	var jb bytes.Buffer
	WriteJSON(&jb, rs)
	if err := json.Unmarshal(jb.Bytes(), &js); err != nil || len(js) != len(rs) {
		t.Errorf("JSON: %v", err)
	}
}
