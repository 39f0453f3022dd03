package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// Upstream serves an existing stdio MCP server over MCP-Flow: each MCP-Flow
// session gets its own subprocess, spoken to in NDJSON. Requests go up with
// ids of the bridge's own; the upstream's own requests (sampling, roots,
// elicitation) reach the MCP-Flow client; progress comes back through the
// session (as datagrams when the client asked for them); $/cancel becomes
// notifications/cancelled; large content leaves the control stream on
// execution streams.
type Upstream struct {
	dial      dialFunc
	threshold int
	log       *slog.Logger

	mu    sync.Mutex
	conns map[*flow.Session]*upConn
}

// upstreamLink is one session's connection to its upstream MCP server,
// message by message: a subprocess's pipes, an in-process server, an HTTP
// session.
type upstreamLink interface {
	// send passes one message on; the caller serializes the calls, and a
	// link sends in that order.
	send(jsonrpc.Message) error
	// close ends the connection and waits until it has ended.
	close()
}

// dialFunc connects one session's upstream. The link hands every message
// from the upstream to recv (possibly from several goroutines), and calls
// end when the upstream's side is over.
type dialFunc func(ctx context.Context, recv func(jsonrpc.Message), end func(error)) (upstreamLink, error)

func newUpstream(dial dialFunc, threshold int, log *slog.Logger) *Upstream {
	if threshold <= 0 {
		threshold = 256 << 10
	}
	if log == nil {
		log = slog.Default()
	}
	return &Upstream{dial: dial, threshold: threshold, log: log, conns: map[*flow.Session]*upConn{}}
}

// NewStdioUpstream returns an upstream that spawns argv per session.
// Content larger than threshold bytes (decoded) goes on execution streams
// (0: 256 KiB).
func NewStdioUpstream(argv []string, threshold int, log *slog.Logger) *Upstream {
	start := func(context.Context) (io.WriteCloser, io.Reader, func(), error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, nil, nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, nil, nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, nil, nil, fmt.Errorf("upstream %s: %w", argv[0], err)
		}
		return stdin, stdout, func() { _ = cmd.Wait() }, nil
	}
	return NewPipeUpstream(start, threshold, log)
}

// NewPipeUpstream returns an upstream that reaches, per session, whatever
// start connects: newline-delimited JSON written to stdin and read from
// stdout (an in-process go-sdk server, for instance; see ServeSDK).
func NewPipeUpstream(start func(ctx context.Context) (stdin io.WriteCloser, stdout io.Reader, wait func(), err error), threshold int, log *slog.Logger) *Upstream {
	u := newUpstream(nil, threshold, log)
	u.dial = func(ctx context.Context, recv func(jsonrpc.Message), end func(error)) (upstreamLink, error) {
		stdin, stdout, wait, err := start(ctx)
		if err != nil {
			return nil, err
		}
		go readNDJSON(stdout, recv, end, u.log)
		return &pipeLink{stdin: stdin, wait: wait}, nil
	}
	return u
}

// pipeLink speaks NDJSON over a pair of pipes (MCP stdio transport).
type pipeLink struct {
	stdin io.WriteCloser
	wait  func()
}

func (l *pipeLink) send(m jsonrpc.Message) error {
	_, err := l.stdin.Write(append(jsonrpc.AppendJSON(nil, m), '\n'))
	return err
}

func (l *pipeLink) close() {
	l.stdin.Close() // the upstream ends on EOF (seeds 000/002)
	l.wait()
}

// readNDJSON hands the messages of stdout to recv until it ends, then calls
// end with the reason.
func readNDJSON(stdout io.Reader, recv func(jsonrpc.Message), end func(error), log *slog.Logger) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), MaxMessage)
	for sc.Scan() {
		p, err := codec.Default(codec.JSON).Decode(bytes.Clone(sc.Bytes()))
		if err != nil {
			log.Warn("upstream wrote a non-JSON line", "err", err)
			continue
		}
		msgs, _ := jsonrpc.Validate(p)
		for _, m := range msgs {
			recv(m)
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	end(err)
}

// Configure sets the hooks of a server config that serves this upstream.
func (u *Upstream) Configure(cfg *flow.ServerConfig) {
	cfg.OnInitialize = u.initialize
	cfg.Handler = flow.HandlerFunc(u.handle)
	cfg.Hooks.Notification = func(s *flow.Session, n *jsonrpc.Request) {
		if c := u.conn(s); c != nil {
			_ = c.send(n)
		}
	}
}

type upConn struct {
	u       *Upstream
	s       *flow.Session
	link    upstreamLink // set under wmu
	wmu     sync.Mutex
	nextID  atomic.Int64
	mu      sync.Mutex
	pending waiters
	byToken map[string]*flow.Request // progress tokens of requests in flight
	ended   chan struct{}            // closed when the upstream's side ends
	endOnce sync.Once
	endErr  error
}

func (u *Upstream) conn(s *flow.Session) *upConn {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.conns[s]
}

func (c *upConn) send(m jsonrpc.Message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.link.send(m)
}

// initialize spawns the upstream for a new session and passes the client's
// initialize on (minus the transport object).
func (u *Upstream) initialize(ctx context.Context, s *flow.Session, params json.RawMessage) (*flow.InitializeResult, error) {
	c := &upConn{u: u, s: s, byToken: map[string]*flow.Request{}, ended: make(chan struct{})}
	c.wmu.Lock() // nothing is sent (an answer to an early server request) before the link is set
	link, err := u.dial(ctx, c.recv, c.end)
	c.link = link
	c.wmu.Unlock()
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	u.conns[s] = c
	u.mu.Unlock()
	go func() {
		<-s.Done()
		link.close()
		u.mu.Lock()
		delete(u.conns, s)
		u.mu.Unlock()
	}()
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	delete(p, "transport")
	up, _ := json.Marshal(p)
	resp, err := c.call(ctx, flow.MethodInitialize, up)
	if err != nil {
		return nil, err
	}
	var res flow.InitializeResult
	if err := json.Unmarshal(resp, &res); err != nil {
		return nil, fmt.Errorf("upstream initialize result: %w", err)
	}
	n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, flow.MethodInitialized, nil)
	return &res, c.send(n)
}

// call sends a request upstream and waits for its result.
func (c *upConn) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id := jsonrpc.Int64ID(c.nextID.Add(1))
	ch, forget := c.pending.add(id)
	defer forget()
	if err := c.send(&jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-c.ended:
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "the upstream MCP server ended: "+c.endErr.Error())
	case <-ctx.Done():
		n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, flow.MethodCancelled, map[string]any{"requestId": json.RawMessage(id.Raw()), "reason": "cancelled by the MCP-Flow client"})
		_ = c.send(n)
		return nil, context.Cause(ctx)
	}
}

// recv takes one message of the upstream's.
func (c *upConn) recv(m jsonrpc.Message) {
	switch m := m.(type) {
	case *jsonrpc.Response:
		c.pending.deliver(m)
	case *jsonrpc.Request:
		if m.IsCall() {
			go c.fromUpstream(m)
		} else {
			c.notification(m)
		}
	}
}

// end is called once the upstream's side is over. The requests waiting for
// it fail, and, unless the session is already ending, the MCP-Flow session
// is shut down gracefully: without its upstream it cannot serve anything
// (answers already on their way still go out).
func (c *upConn) end(err error) {
	c.endOnce.Do(func() {
		c.endErr = err
		close(c.ended)
		select {
		case <-c.s.Done():
			return
		default:
		}
		c.u.log.Warn("upstream ended; shutting the session down", "err", err)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = c.s.Shutdown(ctx, "upstream MCP server ended")
		}()
	})
}

// fromUpstream passes the upstream's request to the MCP-Flow client.
func (c *upConn) fromUpstream(m *jsonrpc.Request) {
	c.u.log.Debug("upstream request", "method", m.Method, "id", m.ID.String())
	resp, err := c.s.Call(c.s.Context(), m.Method, m.Params)
	c.u.log.Debug("upstream request answered", "method", m.Method, "id", m.ID.String(), "err", err)
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &je):
		_ = c.send(jsonrpc.NewErrorResponse(m.ID, je))
	case err != nil:
		_ = c.send(jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error())))
	default:
		_ = c.send(&jsonrpc.Response{ID: m.ID, Result: resp.Result})
	}
}

func (c *upConn) notification(n *jsonrpc.Request) {
	if n.Method == flow.MethodProgress {
		var p flow.Progress
		if json.Unmarshal(n.Params, &p) == nil {
			c.mu.Lock()
			req := c.byToken[string(p.ProgressToken)]
			c.mu.Unlock()
			if req != nil {
				_ = req.Progress(p.Progress, p.Total, p.Message)
				return
			}
		}
	}
	_ = c.s.Notify(n.Method, n.Params)
}

// handle forwards one request of the MCP-Flow client upstream.
func (u *Upstream) handle(ctx context.Context, req *flow.Request) (any, error) {
	c := u.conn(req.Session)
	if c == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "no upstream for this session")
	}
	if tok := progressToken(req.Params); tok != nil {
		c.mu.Lock()
		c.byToken[string(tok)] = req
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.byToken, string(tok))
			c.mu.Unlock()
		}()
	}
	res, err := c.call(ctx, req.Method, req.Params)
	if err != nil {
		return nil, err
	}
	return u.offload(req, res)
}

// offload moves content larger than the threshold onto execution streams:
// text, image and audio data, and embedded resource blobs and texts.
func (u *Upstream) offload(req *flow.Request, result json.RawMessage) (json.RawMessage, error) {
	if len(result) < u.threshold {
		return result, nil
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(result, &res) != nil || res["content"] == nil {
		return result, nil
	}
	var content []map[string]json.RawMessage
	if json.Unmarshal(res["content"], &content) != nil {
		return result, nil
	}
	moved := false
	for i, block := range content {
		payload, mime, field, ok := u.bigPayload(block)
		if !ok {
			continue
		}
		w, err := req.OpenStream(mime)
		if err != nil {
			return result, nil // the limit is reached: inline is still correct
		}
		go func() {
			if _, err := w.Write(payload); err != nil {
				w.Fail(err)
				return
			}
			_ = w.Close()
		}()
		// The original block, without its payload, rides along so that a
		// bridge to plain MCP can put it back together exactly.
		orig := stripPayload(block, field)
		ref := w.Ref()
		b, _ := json.Marshal(struct {
			flow.StreamRef
			Meta map[string]any `json:"_meta"`
		}{ref, map[string]any{OriginalKey: map[string]any{"block": orig, "field": field}}})
		content[i] = map[string]json.RawMessage{}
		_ = json.Unmarshal(b, &content[i])
		moved = true
	}
	if !moved {
		return result, nil
	}
	var err error
	if res["content"], err = json.Marshal(content); err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// OriginalKey is the _meta key of a ref/stream block that carries the
// content block it replaced (minus its payload) and the payload's field:
// "text", "data", "resource.text" or "resource.blob".
const OriginalKey = "io.mcp-flow/original"

// bigPayload returns a content block's payload when it is over the
// threshold (decoded bytes for base64 data and blobs, UTF-8 for text), with
// its MIME type and the field it came from.
func (u *Upstream) bigPayload(block map[string]json.RawMessage) ([]byte, string, string, bool) {
	var typ, mime string
	_ = json.Unmarshal(block["type"], &typ)
	_ = json.Unmarshal(block["mimeType"], &mime)
	str := func(raw json.RawMessage) (string, bool) {
		var s string
		return s, len(raw) >= u.threshold && json.Unmarshal(raw, &s) == nil
	}
	switch typ {
	case "text":
		if s, ok := str(block["text"]); ok {
			return []byte(s), "text/plain; charset=utf-8", "text", true
		}
	case "image", "audio":
		if s, ok := str(block["data"]); ok {
			if b, err := base64.StdEncoding.DecodeString(s); err == nil {
				return b, orDefault(mime, "application/octet-stream"), "data", true
			}
		}
	case "resource":
		var r struct {
			MimeType string  `json:"mimeType"`
			Text     *string `json:"text"`
			Blob     *string `json:"blob"`
		}
		if json.Unmarshal(block["resource"], &r) != nil {
			return nil, "", "", false
		}
		if r.Blob != nil && len(*r.Blob) >= u.threshold {
			if b, err := base64.StdEncoding.DecodeString(*r.Blob); err == nil {
				return b, orDefault(r.MimeType, "application/octet-stream"), "resource.blob", true
			}
		}
		if r.Text != nil && len(*r.Text) >= u.threshold {
			return []byte(*r.Text), orDefault(r.MimeType, "text/plain; charset=utf-8"), "resource.text", true
		}
	}
	return nil, "", "", false
}

// stripPayload returns a copy of block without the payload field.
func stripPayload(block map[string]json.RawMessage, field string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(block))
	for k, v := range block {
		out[k] = v
	}
	if sub, ok := strings.CutPrefix(field, "resource."); ok {
		var r map[string]json.RawMessage
		_ = json.Unmarshal(block["resource"], &r)
		delete(r, sub)
		out["resource"], _ = json.Marshal(r)
	} else {
		delete(out, field)
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

var _ = strconv.Itoa
