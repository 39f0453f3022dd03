// Command draft02peer is an MCP-Flow server on WebTransport draft-02, built
// on webtransport-go v0.6.0 and quic-go v0.41.0 as the published v0.1
// examples are: a peer that a webtransport-go v0.13 client cannot dial
// ("server didn't enable QUIC stream reset partial delivery"). It is written
// for the tests of the legacy dial (internal/draft02) and lives in a module
// of its own so that the main module keeps its pinned QUIC stack.
//
// It listens on 127.0.0.1 with a fresh self-signed certificate, prints
//
//	https://127.0.0.1:PORT/mcp HEX-SHA-256-OF-THE-CERTIFICATE
//
// on stdout, and serves until its stdin closes. Per session it speaks the
// control stream in JSON (the guide's §2 frames) and answers initialize,
// ping, tools/list and tools/call of the tool "generate" ({"bytes": n}),
// whose result names one execution stream of n bytes (8-byte header, then
// the bytes i%251); unknown methods get -32601. After $/shutdown it closes
// the session.
//
// With the arguments "call scenario" it is a client instead (client.go), for
// the conformance runner's client mode.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "call" {
		// Client mode (client.go): draft02peer call scenario.
		if err := runClient(); err != nil {
			fmt.Fprintln(os.Stderr, "draft02peer client:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "draft02peer:", err)
		os.Exit(1)
	}
}

func run() error {
	cert, hash, err := selfSigned()
	if err != nil {
		return err
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ws := &webtransport.Server{
		H3:          http3.Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}},
		CheckOrigin: func(*http.Request) bool { return true },
	}
	var sessions sync.WaitGroup
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		s, err := ws.Upgrade(w, r)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			serve(s)
		}()
	})
	ws.H3.Handler = mux
	served := make(chan error, 1)
	go func() { served <- ws.Serve(pc) }()
	fmt.Printf("https://%s/mcp %s\n", pc.LocalAddr(), hash)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes stdin
	ws.Close()
	pc.Close()
	sessions.Wait()
	<-served
	return nil
}

func selfSigned() (tls.Certificate, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "draft02peer"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	sum := sha256.Sum256(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, hex.EncodeToString(sum[:]), nil
}

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// serve runs one session: the control stream, one frame at a time.
func serve(s *webtransport.Session) {
	defer s.CloseWithError(0, "")
	ctx := s.Context()
	ctrl, err := s.AcceptStream(ctx)
	if err != nil {
		return
	}
	var mu sync.Mutex // one writer at a time on the control stream
	reply := func(id json.RawMessage, result any, code int, msg string) {
		var out []byte
		if code != 0 {
			out, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
		} else {
			out, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		}
		mu.Lock()
		defer mu.Unlock()
		_, _ = ctrl.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(out))), out...))
	}
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(ctrl, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n == 0 || n > 1<<20 {
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(ctrl, body); err != nil {
			return
		}
		var m message
		if json.Unmarshal(body, &m) != nil {
			reply(json.RawMessage("null"), nil, -32700, "parse error")
			continue
		}
		switch {
		case m.Method == "$/shutdown":
			return
		case m.ID == nil:
			continue // a notification
		case m.Method == "initialize":
			reply(m.ID, map[string]any{
				"protocolVersion": "2024-11-05",
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]string{"name": "draft02peer", "version": "0.1"},
				"transport": map[string]any{"type": "mcp-flow", "version": "0.1", "encoding": "json",
					"maxConcurrentStreams": 4, "datagramsSupported": false, "maxFrameSize": 1 << 20},
			}, 0, "")
		case m.Method == "ping":
			reply(m.ID, map[string]any{}, 0, "")
		case m.Method == "tools/list":
			reply(m.ID, map[string]any{"tools": []any{map[string]any{"name": "generate", "inputSchema": map[string]any{"type": "object"}}}}, 0, "")
		case m.Method == "tools/call":
			generate(ctx, s, m, reply)
		default:
			reply(m.ID, nil, -32601, "method not found: "+m.Method)
		}
	}
}

// generate opens one execution stream with the request's id in its header.
func generate(ctx context.Context, s *webtransport.Session, m message, reply func(json.RawMessage, any, int, string)) {
	var p struct {
		Name      string
		Arguments struct{ Bytes int }
	}
	var id uint32
	if json.Unmarshal(m.Params, &p) != nil || p.Name != "generate" || json.Unmarshal(m.ID, &id) != nil {
		reply(m.ID, nil, -32602, "want tools/call generate with an integer id")
		return
	}
	st, err := s.OpenUniStreamSync(ctx)
	if err != nil {
		reply(m.ID, nil, -32603, err.Error())
		return
	}
	const tag = 1
	reply(m.ID, map[string]any{"content": []any{map[string]any{"type": "ref/stream", "streamTag": tag, "mimeType": "application/octet-stream"}}}, 0, "")
	go func() {
		hdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, id), tag)
		buf := make([]byte, p.Arguments.Bytes)
		for i := range buf {
			buf[i] = byte(i % 251)
		}
		_, _ = st.Write(append(hdr, buf...))
		_ = st.Close()
	}()
}
