package fallback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	sdkrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// httpSession is a 2025-11-25 Streamable HTTP session, carried by the
// go-sdk's client transport (its Connection: one POST per message, answers
// as JSON or SSE, the Mcp-Session-Id kept). It does not open the optional
// standalone GET stream: server messages outside a request's answer are
// not received (Client.Changes opens a session of its own for the list
// changes). The server's requests inside an answer (sampling, roots,
// elicitation) get -32601.
type httpSession struct {
	conn   mcp.Connection
	hc     *http.Client
	url    string
	log    *slog.Logger
	init   *flow.InitializeResult
	nextID atomic.Int64

	mu      sync.Mutex
	pending map[int64]*httpCall
	err     error         // why the session ended, once done is closed
	done    chan struct{} // closed when the reader stops
	ctx     context.Context
	stop    context.CancelFunc
}

type httpCall struct {
	resp       chan *sdkrpc.Response
	onProgress func(flow.Progress)
	last       float64
	progressed bool
}

// dialHTTP opens the Streamable HTTP session and runs initialize with the
// same client info and capabilities the MCP-Flow one would send.
func dialHTTP(ctx context.Context, url string, cfg Config) (*httpSession, error) {
	hc := httpClient(cfg)
	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("fallback: Streamable HTTP %s: %w", url, err)
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	h := &httpSession{conn: conn, hc: hc, url: url, log: cfg.Flow.Logger, pending: map[int64]*httpCall{},
		done: make(chan struct{}), ctx: sctx, stop: stop}
	go h.read()
	info := cfg.Flow.Info
	if info.Name == "" {
		info = flow.Implementation{Name: "mcp-flow", Version: protocol.Version}
	}
	caps := cfg.Flow.Capabilities
	if len(caps) == 0 {
		caps = json.RawMessage(`{}`)
	}
	_, res, err := h.call(ctx, protocol.MethodInitialize, map[string]any{
		"protocolVersion": protocol.MCP20251125, "capabilities": caps, "clientInfo": info}, nil)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("fallback: Streamable HTTP initialize: %w", err)
	}
	var ir flow.InitializeResult
	if err := json.Unmarshal(res, &ir); err != nil {
		h.Close()
		return nil, fmt.Errorf("fallback: Streamable HTTP initialize result: %w", err)
	}
	h.init = &ir
	if err := h.notify(ctx, protocol.MethodInitialized, nil); err != nil {
		h.Close()
		return nil, fmt.Errorf("fallback: Streamable HTTP: %w", err)
	}
	return h, nil
}

// read hands each message the server sends to its waiter.
func (h *httpSession) read() {
	defer close(h.done)
	for {
		m, err := h.conn.Read(h.ctx)
		if err != nil {
			h.mu.Lock()
			if h.ctx.Err() != nil {
				err = ErrClosed
			}
			h.err = err
			h.mu.Unlock()
			return
		}
		switch m := m.(type) {
		case *sdkrpc.Response:
			id, _ := m.ID.Raw().(int64)
			h.mu.Lock()
			c := h.pending[id]
			delete(h.pending, id)
			h.mu.Unlock()
			if c != nil {
				c.resp <- m
			}
		case *sdkrpc.Request:
			if m.IsCall() {
				// The server asks (sampling, roots, elicitation): this
				// client offers none of them over the fallback.
				id := m.ID
				go h.conn.Write(h.ctx, &sdkrpc.Response{ID: id, Error: &sdkrpc.Error{Code: sdkrpc.CodeMethodNotFound, Message: "method not found: " + m.Method}})
				continue
			}
			if m.Method == protocol.MethodProgress {
				h.progress(m.Params)
			}
		}
	}
}

// progress hands an update to its call's callback, in increasing order as
// flow.WithProgress does.
func (h *httpSession) progress(params json.RawMessage) {
	var p flow.Progress
	if json.Unmarshal(params, &p) != nil {
		return
	}
	var id int64
	if json.Unmarshal(p.ProgressToken, &id) != nil {
		return
	}
	h.mu.Lock()
	c := h.pending[id]
	if c == nil || c.onProgress == nil || c.progressed && p.Progress <= c.last {
		h.mu.Unlock()
		return
	}
	c.last, c.progressed = p.Progress, true
	f := c.onProgress
	h.mu.Unlock()
	f(p)
}

// call sends a request and waits for its answer; ctx ending sends
// notifications/cancelled (the MCP spec's cancellation) and returns ctx's
// error.
func (h *httpSession) call(ctx context.Context, method string, params any, onProgress func(flow.Progress)) (int64, json.RawMessage, error) {
	num := h.nextID.Add(1)
	var meta []mcpjson.Edit
	if onProgress != nil {
		meta = append(meta, mcpjson.Set(protocol.MetaProgressToken, []byte(fmt.Sprint(num))))
	}
	raw, err := marshalParams(params, meta)
	if err != nil {
		return num, nil, err
	}
	id, _ := sdkrpc.MakeID(float64(num))
	c := &httpCall{resp: make(chan *sdkrpc.Response, 1), onProgress: onProgress}
	h.mu.Lock()
	if h.err != nil {
		h.mu.Unlock()
		return num, nil, h.err
	}
	h.pending[num] = c
	h.mu.Unlock()
	forget := func() {
		h.mu.Lock()
		delete(h.pending, num)
		h.mu.Unlock()
	}
	// The POST's context carries its answer's SSE stream: it ends with
	// the call.
	if err := h.conn.Write(ctx, &sdkrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		forget()
		if ctx.Err() != nil {
			return num, nil, ctx.Err()
		}
		return num, nil, fmt.Errorf("fallback: %s: %w", method, err)
	}
	select {
	case r := <-c.resp:
		if r.Error != nil {
			var we *sdkrpc.Error
			if errors.As(r.Error, &we) {
				return num, nil, &jsonrpc.Error{Code: jsonrpc.Code(we.Code), Message: we.Message, Data: we.Data}
			}
			return num, nil, r.Error
		}
		return num, r.Result, nil
	case <-ctx.Done():
		forget()
		_ = h.notify(h.ctx, protocol.MethodCancelled, map[string]any{"requestId": num, "reason": context.Cause(ctx).Error()})
		return num, nil, ctx.Err()
	case <-h.done:
		forget()
		return num, nil, h.Err()
	}
}

func (h *httpSession) notify(ctx context.Context, method string, params any) error {
	raw, err := marshalParams(params, nil)
	if err != nil {
		return err
	}
	return h.conn.Write(ctx, &sdkrpc.Request{Method: method, Params: raw})
}

// Err is why the session ended (nil while it runs).
func (h *httpSession) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Close ends the session (the go-sdk sends DELETE with the session id) and
// waits for the reader.
func (h *httpSession) Close() error {
	err := h.conn.Close()
	h.stop()
	<-h.done
	if t, ok := h.hc.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	return err
}

// marshalParams marshals params (raw JSON as it is) and applies meta to
// its _meta.
func marshalParams(params any, meta []mcpjson.Edit) (json.RawMessage, error) {
	var raw json.RawMessage
	switch p := params.(type) {
	case nil:
		raw = json.RawMessage(`{}`)
	case json.RawMessage:
		raw = p
	default:
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	if len(meta) == 0 {
		return raw, nil
	}
	return mcpjson.EditMeta(raw, meta...)
}
