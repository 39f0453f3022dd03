package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// Sending to the HTTP upstream: one POST per message, in the bridge's order,
// in either era (2026-07-28: routing headers, no session, a cancel closes
// the request's stream).

// send POSTs one message. It returns once the POST has left, so that
// messages reach the server in the bridge's order without one slow POST
// holding the next (spec §10): a notification once it is written whole
// (notifications/initialized must be in before the requests that follow), a
// request or response once its headers are written (the server handles
// requests concurrently anyway; a server that does not read a large body
// holds that POST only). initialize returns once its answer (with the
// session id) is in and the standalone stream is open. Answers are read in
// the background.
func (c *httpConn) send(m jsonrpc.Message) error {
	if c.isModern() {
		return c.sendModern(m)
	}
	body := jsonrpc.AppendJSON(nil, m)
	var call jsonrpc.ID
	initialize, notification := false, false
	var cancelled jsonrpc.ID // the request a notifications/cancelled is about
	if r, ok := m.(*jsonrpc.Request); ok {
		call = r.ID
		notification = !r.IsCall()
		initialize = r.Method == protocol.MethodInitialize
		if initialize {
			c.mu.Lock()
			c.initID = r.ID
			c.mu.Unlock()
		}
		if r.Method == protocol.MethodCancelled {
			var p struct {
				RequestID jsonrpc.ID `json:"requestId"`
			}
			if json.Unmarshal(r.Params, &p) == nil {
				cancelled = p.RequestID
			}
		}
	}
	// A request's POST and its stream end when the bridge cancels it.
	ctx, cancel := context.WithCancel(c.ctx)
	if call.IsValid() {
		c.mu.Lock()
		c.calls[call.Raw()] = cancel
		c.mu.Unlock()
	}
	left := make(chan struct{})
	var once sync.Once
	markLeft := func() { once.Do(func() { close(left) }) }
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		markLeft()
		if cancelled.IsValid() {
			// The notification is on the wire; the cancelled request's
			// POST and SSE stream are of no more use (MCP sends no
			// response to it).
			c.mu.Lock()
			stop := c.calls[cancelled.Raw()]
			c.mu.Unlock()
			if stop != nil {
				stop()
			}
		}
	}}
	if !notification {
		trace.WroteHeaders = markLeft
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.calls, call.Raw())
			c.mu.Unlock()
			cancel()
		}()
		resp, err := c.do(httptrace.WithClientTrace(ctx, trace), http.MethodPost, body, nil)
		markLeft()
		if err != nil {
			if ctx.Err() == nil {
				c.failCall(call, fmt.Sprintf("upstream %s: %v", c.cfg.Endpoint, err))
			}
			return
		}
		if initialize && !c.isLegacy() && (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed) {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if e := modernError(b); e != nil {
				// A 2026-07-28 server refusing the 2025 handshake
				// (transports 2026-07-28, "Backward Compatibility"): no
				// HTTP+SSE fallback; the bridge may probe it instead.
				c.recv(jsonrpc.NewErrorResponse(call, e))
				return
			}
			if err := c.legacy(body, resp.Status); err != nil {
				c.failCall(call, err.Error())
			}
			return
		}
		c.answer(ctx, resp, call)
	}()
	<-left
	if initialize {
		// The session id comes with the initialize response; nothing else
		// may be sent before it is known. Then the standalone stream opens
		// before anything else is sent (as the go-sdk's client does), so
		// that no server request sent on it is lost to a race.
		c.wg.Wait()
		c.mu.Lock()
		ok := c.version != "" && c.postURL == "" && !c.modern // a refused initialize may be followed by a probe at once
		c.mu.Unlock()
		if ok {
			c.listen()
		}
	}
	return nil
}

// requestScoped marks c's requests as ending with their own response
// streams (listen.go).
func (c *httpConn) requestScoped() {}

// sendModern sends one message to a 2026-07-28 server: a request as its own
// POST with the routing headers; notifications/cancelled closes the
// cancelled request's response stream instead of being sent (that is the
// cancellation on Streamable HTTP); other notifications and responses have
// no place in this revision and are dropped.
func (c *httpConn) sendModern(m jsonrpc.Message) error {
	r, ok := m.(*jsonrpc.Request)
	if !ok || !r.IsCall() {
		if ok && r.Method == protocol.MethodCancelled {
			var p struct {
				RequestID jsonrpc.ID `json:"requestId"`
			}
			if json.Unmarshal(r.Params, &p) == nil {
				c.mu.Lock()
				stop := c.calls[p.RequestID.Raw()]
				c.mu.Unlock()
				if stop != nil {
					stop()
				}
			}
		}
		return nil
	}
	body := jsonrpc.AppendJSON(nil, m)
	ctx, cancel := context.WithCancel(c.ctx)
	c.mu.Lock()
	c.calls[r.ID.Raw()] = cancel
	if r.Method == "tools/list" {
		c.toolLists[r.ID.Raw()] = true
	}
	c.mu.Unlock()
	left := make(chan struct{})
	var once sync.Once
	markLeft := func() { once.Do(func() { close(left) }) }
	trace := &httptrace.ClientTrace{WroteHeaders: markLeft}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.calls, r.ID.Raw())
			delete(c.toolLists, r.ID.Raw())
			c.mu.Unlock()
			cancel()
		}()
		resp, err := c.do(httptrace.WithClientTrace(ctx, trace), http.MethodPost, body, c.requestHeaders(r))
		markLeft()
		if err != nil {
			if ctx.Err() == nil {
				c.failCall(r.ID, fmt.Sprintf("upstream %s: %v", c.cfg.Endpoint, err))
			}
			return
		}
		c.answer(ctx, resp, r.ID)
	}()
	<-left
	return nil
}

// modernError returns the JSON-RPC error of a body that is a 2026-07-28
// server's refusal (UnsupportedProtocolVersionError, -32022), else nil.
func modernError(body []byte) *jsonrpc.Error {
	var r struct {
		Error *jsonrpc.Error `json:"error"`
	}
	if json.Unmarshal(body, &r) != nil || r.Error == nil || r.Error.Code != protocol.CodeUnsupportedProtocolVersion {
		return nil
	}
	return r.Error
}
