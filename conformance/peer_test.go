package conformance

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// peerConfig sets how scriptedPeer breaks or bends one rule at a time; its
// zero value is a small server that follows the guide in JSON.
type peerConfig struct {
	// originStatus refuses a CONNECT whose Origin is not its own with this
	// status (0: accepts any Origin).
	originStatus int
	// clientStreams is what it does with a unidirectional stream the client
	// opens: "" never accepts it, "refuse" stops it at once (STOP_SENDING),
	// "drain" reads it all and says nothing.
	clientStreams string
	// failFIN makes fail_midstream finish its stream (a FIN) and send
	// $/streamError; failNoNote resets it and sends nothing. By default it
	// resets the stream and sends $/streamError.
	failFIN, failNoNote bool
	// noDatagrams announces datagramsSupported: false; answer32004 then
	// answers each datagram with -32004.
	noDatagrams, answer32004 bool
}

// scriptedPeer serves MCP-Flow at /mcp on 127.0.0.1 as cfg says: initialize
// with the schema's ServerTransportCapabilities, ping, tools/list and the
// tool fail_midstream (an execution stream that fails after 1000 bytes).
// It returns the URL.
func scriptedPeer(t *testing.T, cfg peerConfig) string {
	tlsConf := certs.ServerTLSConfig(flowtest.Cert)
	h3 := &http3.Server{TLSConfig: http3.ConfigureTLSConfig(tlsConf), QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true}}
	webtransport.ConfigureHTTP3Server(h3)
	ws := &webtransport.Server{H3: h3, CheckOrigin: func(*http.Request) bool { return true }}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); cfg.originStatus != 0 && o != "" && o != "https://"+r.Host {
			w.WriteHeader(cfg.originStatus)
			return
		}
		s, err := ws.Upgrade(w, r)
		if err != nil {
			return
		}
		servePeer(s, cfg)
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

func servePeer(s *webtransport.Session, cfg peerConfig) {
	ctx := s.Context()
	st, err := s.AcceptStream(ctx)
	if err != nil {
		return
	}
	write := make(chan []byte, 16) // one writer on the control stream
	go func() {
		for b := range write {
			_, _ = st.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...))
		}
	}()
	defer close(write)
	send := func(v any) {
		b, _ := json.Marshal(v)
		write <- b
	}
	reply := func(id json.RawMessage, result any) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	nullError := func(code int, msg string) {
		send(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	}
	switch cfg.clientStreams {
	case "refuse", "drain":
		go func() {
			for {
				rs, err := s.AcceptUniStream(ctx)
				if err != nil {
					return
				}
				if cfg.clientStreams == "refuse" {
					rs.CancelRead(1)
				} else {
					go io.Copy(io.Discard, rs)
				}
			}
		}()
	}
	if cfg.answer32004 {
		go func() {
			for {
				if _, err := s.ReceiveDatagram(ctx); err != nil {
					return
				}
				nullError(-32004, "datagrams not supported")
			}
		}()
	}
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(st, hdr[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(st, body); err != nil {
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &req) != nil {
			nullError(-32700, "parse error")
			continue
		}
		if req.ID == nil {
			continue
		}
		switch req.Method {
		case "initialize":
			reply(req.ID, map[string]any{"protocolVersion": "2024-11-05", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]string{"name": "scripted", "version": "0"},
				"transport":  map[string]any{"type": "mcp-flow", "version": "0.1", "encoding": "json", "maxConcurrentStreams": 4, "datagramsSupported": !cfg.noDatagrams}})
		case "tools/list":
			reply(req.ID, map[string]any{"tools": []any{map[string]any{"name": "fail_midstream", "inputSchema": map[string]any{"type": "object"}}}})
		case "tools/call":
			var id uint32
			_ = json.Unmarshal(req.ID, &id)
			es, err := s.OpenUniStreamSync(ctx)
			if err != nil {
				return
			}
			_, _ = es.Write(append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, id), 1), make([]byte, 1000)...))
			reply(req.ID, map[string]any{"content": []any{map[string]any{"type": "ref/stream", "streamTag": 1, "mimeType": "application/octet-stream"}}})
			if cfg.failFIN {
				_ = es.Close()
			} else {
				es.CancelWrite(32603)
			}
			if !cfg.failNoNote {
				send(map[string]any{"jsonrpc": "2.0", "method": "$/streamError", "params": map[string]any{"requestId": id, "streamTag": 1, "error": "scripted failure"}})
			}
		default:
			reply(req.ID, map[string]any{})
		}
	}
}

// TestGradesFollowTheGuide: each rule the guide states loosely passes a peer
// that keeps the guide's word and breaks only the project's refinement, and
// fails a peer that breaks the guide's word.
func TestGradesFollowTheGuide(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  peerConfig
		want map[string]Status
	}{
		{"origin refused with 400", peerConfig{originStatus: http.StatusBadRequest},
			map[string]Status{"origin": Pass, "origin.403": Fail}},
		{"origin refused with 403", peerConfig{originStatus: http.StatusForbidden},
			map[string]Status{"origin": Pass, "origin.403": Pass}},
		{"origin answered 500", peerConfig{originStatus: http.StatusInternalServerError},
			map[string]Status{"origin": Fail, "origin.403": Fail}},
		{"origin not checked", peerConfig{},
			map[string]Status{"origin": Fail, "origin.403": Fail}},
		{"client streams never read", peerConfig{},
			map[string]Status{"stream.injection": Skip, "stream.injection-report": Fail}},
		{"client streams refused", peerConfig{clientStreams: "refuse"},
			map[string]Status{"stream.injection": Pass, "stream.injection-report": Fail}},
		{"client streams taken in silence", peerConfig{clientStreams: "drain"},
			map[string]Status{"stream.injection": Fail, "stream.injection-report": Fail}},
		{"failed stream reset and reported", peerConfig{},
			map[string]Status{"stream.error": Pass, "stream.error-reset": Pass}},
		{"failed stream finished and reported", peerConfig{failFIN: true},
			map[string]Status{"stream.error": Pass, "stream.error-reset": Fail}},
		{"failed stream reset, not reported", peerConfig{failNoNote: true},
			map[string]Status{"stream.error": Fail, "stream.error-reset": Pass}},
		{"datagramsSupported false, -32004", peerConfig{noDatagrams: true, answer32004: true},
			map[string]Status{"datagram.unsupported": Pass, "datagram.opt-out": Pass}},
		{"datagramsSupported false, silent", peerConfig{noDatagrams: true},
			map[string]Status{"datagram.unsupported": Fail, "datagram.opt-out": Fail}},
		{"datagramsSupported true, silent", peerConfig{},
			map[string]Status{"datagram.unsupported": Skip, "datagram.opt-out": Fail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each has its own peer; most wait out an answer wait
			url := scriptedPeer(t, tc.cfg)
			only := map[string]bool{}
			for id := range tc.want {
				only[id] = true
			}
			rs := RunServer(context.Background(), Target{URL: url, TLS: flowtest.ClientTLS(t)}, ServerChecks(), Options{CheckTimeout: 5 * time.Second, Only: only})
			if len(rs) != len(tc.want) {
				t.Fatalf("%d results for %d checks", len(rs), len(tc.want))
			}
			for _, r := range rs {
				if r.Status != tc.want[r.ID] {
					t.Errorf("%s: %s (%s), want %s", r.ID, r.Status, r.Seen, tc.want[r.ID])
				}
			}
		})
	}
}
