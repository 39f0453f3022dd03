package conformance

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/mcp-flow/mcp-flow/wtconn"
)

// judgeCall is one tools/call as a scenario's tool sees it.
type judgeCall struct {
	js            *judgeSession
	id            jsonrpc.ID
	progressToken json.RawMessage
	after         func() // runs after the answer is written
}

func (c *judgeCall) note(f string, a ...any) { c.js.ev.note(f, a...) }

// spawn runs f on a goroutine of its own that the session waits for before
// its evidence is judged.
func (c *judgeCall) spawn(f func()) { c.js.bg.Go(f) }

// requestID is the call's id as stream and datagram headers carry it.
func (c *judgeCall) requestID() (uint32, error) {
	id, ok := c.id.Uint32()
	if !ok {
		return 0, fmt.Errorf("request id %s does not fit 32 bits: no stream or datagram can name it", c.id)
	}
	return id, nil
}

// openStream opens an execution stream with its header (guide §2.2, §5) and
// returns it with its ref/stream content.
func (c *judgeCall) openStream(ctx context.Context, mime string) (wtconn.SendStream, refBlock, error) {
	id, err := c.requestID()
	if err != nil {
		return nil, refBlock{}, err
	}
	st, err := c.js.s.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, refBlock{}, err
	}
	c.js.mu.Lock()
	c.js.tags++
	tag := c.js.tags
	c.js.mu.Unlock()
	if _, err := st.Write(wire.StreamHeader{RequestID: id, StreamTag: tag}.Append(nil)); err != nil {
		return nil, refBlock{}, err
	}
	return st, newRef(tag, mime), nil
}

// notify sends a notification in the negotiated encoding.
func (c *judgeCall) notify(method string, params any) error {
	n, err := jsonrpc.NewRequest(jsonrpc.ID{}, method, params)
	if err != nil {
		return err
	}
	return c.js.send(c.js.enc, n)
}

// progress sends one progress update the way the guide says (§2.3): a
// datagram on channel 1 with the request id, its payload in the negotiated
// encoding. Only a client that turned datagrams off with this project's
// `datagrams: false` gets notifications/progress instead.
func (c *judgeCall) progress(progress, total float64) error {
	v := map[string]any{"progress": progress, "total": total}
	if len(c.progressToken) > 0 {
		v["progressToken"] = c.progressToken
	}
	if c.datagramsOff() {
		return c.notify(protocol.MethodProgress, v)
	}
	return c.datagram(guideChannelProgress, v)
}

// datagramsOff reports whether the client refused datagrams with this
// project's `datagrams: false`; a client that follows the guide alone never
// does.
func (c *judgeCall) datagramsOff() bool {
	c.js.ev.mu.Lock()
	defer c.js.ev.mu.Unlock()
	return c.js.ev.transport.Datagrams != nil && !*c.js.ev.transport.Datagrams
}

// datagram sends v about the call on channel ch, laid out as guide §2.3
// says: the channel (1 byte), flags 0 (1 byte), the request id (4 bytes,
// big-endian), then v in the negotiated encoding.
func (c *judgeCall) datagram(ch byte, v any) error {
	id, err := c.requestID()
	if err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b := binary.BigEndian.AppendUint32([]byte{ch, 0}, id)
	if b, err = c.js.enc.AppendValue(b, raw); err != nil {
		return err
	}
	return c.js.s.SendDatagram(b)
}

// ping sends ping to the client and waits for its answer.
func (c *judgeCall) ping(ctx context.Context) error {
	js := c.js
	js.mu.Lock()
	js.nextID++
	id := jsonrpc.Int64ID(1000 + js.nextID)
	ch := make(chan *jsonrpc.Response, 1)
	js.pending[id.Raw()] = ch
	js.mu.Unlock()
	req, _ := jsonrpc.NewRequest(id, protocol.MethodPing, nil)
	if err := js.send(js.enc, req); err != nil {
		return err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("ping answered with error %d %s", r.Error.Code, r.Error.Message)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shutdown sends $/shutdown (guide §7: either side may).
func (c *judgeCall) shutdown() error {
	c.js.mu.Lock()
	c.js.shutdown, c.js.sentShut = true, true
	c.js.mu.Unlock()
	return c.notify(protocol.MethodShutdown, nil)
}
