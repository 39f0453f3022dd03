package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// Client mode follows the client contract of the conformance runner's client
// mode (docs/conformance.md): with MCP_FLOW_URL and MCP_FLOW_CERT_HASH (hex
// SHA-256 of the server's certificate) in the environment it connects in
// WebTransport draft-02, as the published v0.1 example client does,
// initializes in JSON (the only encoding it names), calls the tool
// "scenario", answers the server's ping, reads every execution stream of the
// result to its end by its 8-byte header, fails on a reset or a
// $/streamError; after the server's $/shutdown it closes the session, else
// it sends $/shutdown and waits for the server to close it. Like a client that follows only the guide, it
// names no `datagrams` field and never finishes the control stream.
// webtransport-go v0.6 has no datagram API: datagrams are not read.

const (
	clientCallID = 2
	clientWait   = 10 * time.Second
)

type peerClient struct {
	ctrl webtransport.Stream
	wmu  sync.Mutex

	mu          sync.Mutex
	gotShutdown bool
	streamErrs  map[uint32]string
}

func (c *peerClient) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.ctrl.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > 16<<20 {
		return nil, fmt.Errorf("frame length %d", n)
	}
	body := make([]byte, n)
	_, err := io.ReadFull(r, body)
	return body, err
}

func runClient() error {
	want, err := hex.DecodeString(os.Getenv("MCP_FLOW_CERT_HASH"))
	if err != nil || len(want) != sha256.Size {
		return fmt.Errorf("MCP_FLOW_CERT_HASH: want hex SHA-256")
	}
	tlsConf := &tls.Config{
		MinVersion:         tls.VersionTLS13,
		NextProtos:         []string{http3.NextProtoH3},
		InsecureSkipVerify: true, // the certificate is pinned below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("no certificate")
			}
			if sum := sha256.Sum256(raw[0]); !bytes.Equal(sum[:], want) {
				return errors.New("certificate hash mismatch")
			}
			return nil
		},
	}
	d := webtransport.Dialer{RoundTripper: &http3.RoundTripper{TLSClientConfig: tlsConf, QuicConfig: &quic.Config{}}}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*clientWait)
	defer cancel()
	_, sess, err := d.Dial(ctx, os.Getenv("MCP_FLOW_URL"), nil)
	if err != nil {
		return err
	}
	defer sess.CloseWithError(0, "")
	ctrl, err := sess.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	c := &peerClient{ctrl: ctrl, streamErrs: map[uint32]string{}}
	if err := c.write(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2024-11-05", "capabilities": map[string]any{}, "clientInfo": map[string]string{"name": "draft02peer", "version": "0.1"},
		"transport": map[string]any{"type": "mcp-flow", "version": "0.1", "encodings": []string{"json"}}}}); err != nil {
		return err
	}
	f, err := readFrame(ctrl)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	var init struct {
		Result struct {
			Transport struct{ Encoding string } `json:"transport"`
		} `json:"result"`
	}
	if err := json.Unmarshal(f, &init); err != nil || init.Result.Transport.Encoding != "json" {
		return fmt.Errorf("initialize result %s: want encoding json", f)
	}
	if err := c.write(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return err
	}
	streams := make(chan webtransport.ReceiveStream, 8)
	go func() {
		for {
			rs, err := sess.AcceptUniStream(ctx)
			if err != nil {
				return
			}
			streams <- rs
		}
	}()
	if err := c.write(map[string]any{"jsonrpc": "2.0", "id": clientCallID, "method": "tools/call", "params": map[string]any{"name": "scenario", "arguments": map[string]any{}}}); err != nil {
		return err
	}
	results := make(chan json.RawMessage, 1)
	go c.readControl(results)
	var res json.RawMessage
	select {
	case res = <-results:
	case <-time.After(clientWait):
		return errors.New("no answer to tools/call")
	}
	var answer struct {
		Result *struct {
			Content []struct {
				Type      string `json:"type"`
				StreamTag uint32 `json:"streamTag"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(res, &answer); err != nil {
		return err
	}
	if answer.Error != nil {
		return fmt.Errorf("tools/call: %d %s", answer.Error.Code, answer.Error.Message)
	}
	if answer.Result == nil || answer.Result.IsError {
		return fmt.Errorf("tools/call: %s", res)
	}
	for _, ct := range answer.Result.Content {
		if ct.Type == "ref/stream" {
			if err := c.readStream(streams, ct.StreamTag); err != nil {
				return err
			}
		}
	}
	// The side that receives $/shutdown drains and closes (guide §1).
	c.mu.Lock()
	shut := c.gotShutdown
	c.mu.Unlock()
	if shut {
		return sess.CloseWithError(0, "")
	}
	if err := c.write(map[string]any{"jsonrpc": "2.0", "method": "$/shutdown"}); err != nil {
		return err
	}
	select {
	case <-sess.Context().Done():
		return nil
	case <-time.After(clientWait):
		return fmt.Errorf("the server did not close the session within %v of $/shutdown", clientWait)
	}
}

func (c *peerClient) readStream(streams <-chan webtransport.ReceiveStream, tag uint32) error {
	for {
		var rs webtransport.ReceiveStream
		select {
		case rs = <-streams:
		case <-time.After(clientWait):
			return fmt.Errorf("no execution stream for streamTag %d (-32001)", tag)
		}
		var hdr [8]byte
		if _, err := io.ReadFull(rs, hdr[:]); err != nil {
			return fmt.Errorf("execution stream header: %w", err)
		}
		if binary.BigEndian.Uint32(hdr[:4]) != clientCallID || binary.BigEndian.Uint32(hdr[4:]) != tag {
			rs.CancelRead(32002)
			continue
		}
		n, err := io.Copy(io.Discard, rs)
		if err != nil {
			return fmt.Errorf("execution stream %d failed after %d bytes: %w", tag, n, err)
		}
		c.mu.Lock()
		e, failed := c.streamErrs[tag]
		c.mu.Unlock()
		if failed {
			return fmt.Errorf("execution stream %d: $/streamError %s", tag, e)
		}
		fmt.Fprintf(os.Stderr, "draft02peer client: stream %d: %d bytes\n", tag, n)
		return nil
	}
}

func (c *peerClient) readControl(results chan<- json.RawMessage) {
	for {
		f, err := readFrame(c.ctrl)
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(f, &m) != nil {
			continue
		}
		switch {
		case m.Method == "" && string(m.ID) == fmt.Sprint(clientCallID):
			results <- f
		case m.Method == "ping" && m.ID != nil:
			_ = c.write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
		case m.Method != "" && m.ID != nil:
			_ = c.write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + m.Method}})
		case m.Method == "$/shutdown":
			c.mu.Lock()
			c.gotShutdown = true
			c.mu.Unlock()
		case m.Method == "$/streamError":
			var p struct {
				StreamTag uint32 `json:"streamTag"`
				Error     string `json:"error"`
			}
			_ = json.Unmarshal(m.Params, &p)
			c.mu.Lock()
			c.streamErrs[p.StreamTag] = p.Error
			c.mu.Unlock()
		}
	}
}
