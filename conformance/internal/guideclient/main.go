// Command guideclient is an MCP-Flow client that does what the
// implementation guide and the published v0.1 schema say a client does, and
// nothing that only this project adds, for testing that the conformance
// runner's client mode fails no `guide` check of such a client. It follows
// the client contract of package conformance (CMD call scenario, with
// MCP_FLOW_URL and MCP_FLOW_CERT_HASH).
//
// What sets it apart from this project's client:
//   - its initialize names no `datagrams` field (the schema has none), so it
//     takes progress as datagrams, which it reads and checks (guide §2.3);
//   - it never finishes (FIN) its direction of the control stream; after the
//     server's $/shutdown it closes the session once its call is done, and
//     after its own it waits for the server to close the session (guide §1:
//     the side that receives $/shutdown drains streams and closes the
//     session), failing if the close does not come;
//   - it matches execution streams to its request by their 8-byte header.
//
// On exit it writes on stderr what it saw, e.g. "progress datagrams: 3".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/conformance/internal/contract"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/quic-go/webtransport-go"
)

// callID is the id of the tools/call; it fits the 4 bytes of stream and
// datagram headers (guide §2.2, §2.3).
const callID = 2

// wait bounds each wait of the client. What it waits for comes within
// milliseconds on loopback; the one wait that always runs out is
// client.invalid-ref's, for a stream the judge never opens, so the bound is
// also that check's length (it was 10 s).
const wait = 5 * time.Second

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "guideclient:", err)
		os.Exit(1)
	}
}

type client struct {
	*contract.Conn
	enc codec.Codec // the negotiated encoding

	mu          sync.Mutex
	progress    int      // valid progress datagrams for callID
	audio, logs int      // audio and log datagrams for callID, payload in the negotiated encoding
	badDatagram []string // datagrams that break guide §2.3
	gotShutdown bool
	streamErrs  map[uint32]string // $/streamError by tag
}

func (c *client) send(m jsonrpc.Message) error { return c.Send(c.enc, m) }

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
	defer cancel()
	conn, err := contract.Dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	sess := conn.Sess
	defer sess.CloseWithError(0, "") //nolint:errcheck // may be closed already
	c := &client{Conn: conn, streamErrs: map[uint32]string{}}
	defer func() {
		c.mu.Lock()
		fmt.Fprintf(os.Stderr, "guideclient: progress datagrams: %d; audio datagrams: %d; log datagrams: %d; server $/shutdown: %v\n", c.progress, c.audio, c.logs, c.gotShutdown)
		c.mu.Unlock()
	}()

	// Guide §1, §3: initialize in JSON, then the negotiated encoding.
	neg, err := c.Initialize(protocol.MCP20241105, "guideclient")
	if err != nil {
		return err
	}
	c.enc = neg.Codec
	n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodInitialized, nil)
	if err := c.send(n); err != nil {
		return err
	}
	if neg.Datagrams {
		go c.readDatagrams(ctx)
	}

	// Execution streams, by their header.
	streams := c.Streams(ctx)

	if err := c.send(contract.Call(jsonrpc.Int64ID(callID))); err != nil {
		return err
	}
	results := make(chan *jsonrpc.Response, 1)
	go c.readControl(results)
	var res *jsonrpc.Response
	select {
	case res = <-results:
	case <-time.After(wait):
		return errors.New("no answer to tools/call")
	}
	tags, err := contract.StreamTags(res)
	if err != nil {
		return err
	}
	for _, tag := range tags {
		if err := c.readStream(streams, tag); err != nil {
			return err
		}
	}

	c.mu.Lock()
	shut, bad := c.gotShutdown, c.badDatagram
	c.mu.Unlock()
	if len(bad) > 0 {
		return fmt.Errorf("datagrams against guide §2.3: %v", bad)
	}
	// Guide §1, §7: the side that receives $/shutdown drains and closes the
	// session. After the server's, the client's work is done: it closes.
	// Otherwise it sends $/shutdown and the server must close. No FIN
	// either way: the guide does not ask for one.
	if shut {
		fmt.Fprintln(os.Stderr, "guideclient: closing the session after the server's $/shutdown")
		return sess.CloseWithError(0, "")
	}
	sd, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodShutdown, nil)
	if err := c.send(sd); err != nil {
		return err
	}
	select {
	case <-sess.Context().Done():
		return nil
	case <-time.After(wait):
		return fmt.Errorf("the server did not close the session within %v of $/shutdown (guide §1: drain streams, close session)", wait)
	}
}

// readStream reads the execution stream whose header names callID and tag
// to its end (guide §5); a reset, or a $/streamError for it, fails it
// (guide §4.3); none arriving is an invalid stream reference (-32001).
func (c *client) readStream(streams <-chan *webtransport.ReceiveStream, tag uint32) error {
	for {
		var rs *webtransport.ReceiveStream
		select {
		case rs = <-streams:
		case <-time.After(wait):
			return fmt.Errorf("no execution stream for streamTag %d (-32001)", tag)
		}
		h, err := wire.ReadStreamHeader(rs)
		if err != nil {
			return fmt.Errorf("execution stream header: %w", err)
		}
		if h.RequestID != callID || h.StreamTag != tag {
			rs.CancelRead(32002) // not ours: guide §9, injection
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
		fmt.Fprintf(os.Stderr, "guideclient: stream %d: %d bytes\n", tag, n)
		return nil
	}
}

// readControl reads the server's frames: the answer to the call, ping, and
// the notifications of the guide.
func (c *client) readControl(results chan<- *jsonrpc.Response) {
	for {
		msgs, err := c.ReadMessages(c.enc)
		if err != nil {
			return
		}
		for _, m := range msgs {
			switch m := m.(type) {
			case *jsonrpc.Response:
				if id, ok := m.ID.Int64(); ok && id == callID {
					results <- m
				}
			case *jsonrpc.Request:
				switch {
				case m.IsCall():
					_ = c.send(contract.Answer(m))
				case m.Method == protocol.MethodShutdown:
					c.mu.Lock()
					c.gotShutdown = true
					c.mu.Unlock()
				case m.Method == protocol.MethodStreamError:
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
	}
}

// readDatagrams reads datagrams until the session ends and checks those of
// the guide's channels (§2.3: progress 1, audio 2, log 3): flags 0, the
// call's id, a payload in the negotiated encoding. It counts them; audio
// and logs have no use here beyond that.
func (c *client) readDatagrams(ctx context.Context) {
	for {
		b, err := c.Sess.ReceiveDatagram(ctx)
		if err != nil {
			return
		}
		h, payload, err := wire.ParseDatagram(b)
		c.mu.Lock()
		switch {
		case err != nil:
			c.badDatagram = append(c.badDatagram, err.Error())
		case h.RequestID != callID:
			c.badDatagram = append(c.badDatagram, fmt.Sprintf("%s for request %d", h.Channel, h.RequestID))
		default:
			if v, err := c.enc.DecodeValue(payload); err != nil || !json.Valid(v) {
				c.badDatagram = append(c.badDatagram, fmt.Sprintf("%s payload not %s: %v", h.Channel, c.enc.Name(), err))
				break
			}
			switch h.Channel {
			case wire.ChannelProgress:
				c.progress++
			case wire.ChannelAudio:
				c.audio++
			case wire.ChannelLog:
				c.logs++
			}
		}
		c.mu.Unlock()
	}
}
