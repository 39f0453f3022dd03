package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge/plainio"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// Reading the HTTP upstream's answers: JSON bodies and SSE streams, their
// resumption, the standalone GET stream, and the 2024-11-05 HTTP+SSE
// fallback.

// answer reads the server's answer to a POST: 202 for notifications and
// responses, a JSON body or an SSE stream for requests.
func (c *httpConn) answer(ctx context.Context, resp *http.Response, call jsonrpc.ID) {
	defer resp.Body.Close()
	if c.isLegacy() { // answers come on the SSE stream; a POST only says accepted or not
		if resp.StatusCode/100 != 2 {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			c.failCall(call, fmt.Sprintf("upstream (HTTP+SSE) answered HTTP %s: %s", resp.Status, strings.TrimSpace(string(b))))
		}
		return
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.mu.Lock()
		if c.sessionID == "" {
			c.sessionID = sid
		}
		c.mu.Unlock()
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && c.session() != "":
		c.mu.Lock()
		c.expired = true
		c.mu.Unlock()
		c.failCall(call, "upstream session expired (HTTP 404)")
		c.log.Warn("upstream session expired", "endpoint", c.cfg.Endpoint)
		c.end(errors.New("upstream session expired (HTTP 404)"))
		return
	case resp.StatusCode/100 != 2:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if p, err := codec.Default(codec.JSON).Decode(b); err == nil {
			if msgs, _ := jsonrpc.Validate(p); len(msgs) == 1 {
				if r, ok := msgs[0].(*jsonrpc.Response); ok && r.Error != nil && call.IsValid() {
					r.ID = call
					c.recv(r)
					return
				}
			}
		}
		c.failCall(call, fmt.Sprintf("upstream answered HTTP %s: %s", resp.Status, strings.TrimSpace(string(b))))
		return
	case !call.IsValid():
		return // 202 for a notification or a response
	}
	switch mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); strings.TrimSpace(strings.ToLower(mt)) {
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.cfg.MaxMessage)+1))
		switch {
		case err != nil:
			c.failCall(call, fmt.Sprintf("upstream JSON answer unreadable: %v", err))
			return
		case len(b) > c.cfg.MaxMessage:
			c.failCall(call, fmt.Sprintf("upstream JSON answer over the %d-byte message limit", c.cfg.MaxMessage))
			return
		}
		if !c.deliverRaw(b, call) {
			c.failCall(call, "upstream answered without a response to the request")
		}
	case "text/event-stream":
		c.stream(ctx, resp, call)
	default:
		c.failCall(call, fmt.Sprintf("upstream answered %q, neither JSON nor SSE", resp.Header.Get("Content-Type")))
	}
}

// legacyWait bounds how long the legacy transport's endpoint event and
// initialize answer may take.
const legacyWait = 30 * time.Second

// legacy falls back to the HTTP+SSE transport of MCP 2024-11-05, as the
// 2025-11-25 transports spec tells a client to when its initialize POST
// gets 400, 404 or 405 ("Backwards Compatibility"): GET the endpoint for an
// SSE stream whose first event, "endpoint", names the URL to POST messages
// to; every server message then comes on that one stream. It returns once
// the initialize response is in.
func (c *httpConn) legacy(initBody []byte, postStatus string) error {
	resp, err := c.do(c.ctx, http.MethodGet, nil, http.Header{"Accept": {"text/event-stream"}})
	if err != nil {
		return fmt.Errorf("upstream %s: POST answered %s, and the HTTP+SSE GET failed: %v", c.cfg.Endpoint, postStatus, err)
	}
	if resp.StatusCode != http.StatusOK || !isEventStream(resp) {
		resp.Body.Close()
		return fmt.Errorf("upstream %s speaks neither Streamable HTTP (POST answered %s) nor HTTP+SSE (GET answered %s)", c.cfg.Endpoint, postStatus, resp.Status)
	}
	stop := time.AfterFunc(legacyWait, func() { resp.Body.Close() })
	rd := plainio.NewSSEReader(resp.Body, c.cfg.MaxMessage)
	ev, err := rd.Next()
	stop.Stop()
	if err != nil || ev.Type != "endpoint" {
		resp.Body.Close()
		return fmt.Errorf("upstream HTTP+SSE stream: want an endpoint event first, got %q (%v)", ev.Type, err)
	}
	base, _ := url.Parse(c.cfg.Endpoint)
	post, err := base.Parse(strings.TrimSpace(string(ev.Data)))
	if err != nil || (post.Scheme != "http" && post.Scheme != "https") || post.Host != base.Host {
		resp.Body.Close()
		return fmt.Errorf("upstream HTTP+SSE endpoint %q is not on %s", ev.Data, base.Host)
	}
	c.mu.Lock()
	c.postURL = post.String()
	c.mu.Unlock()
	c.log.Info("upstream speaks the 2024-11-05 HTTP+SSE transport", "post", c.postURL)
	go func() { // the one stream of every server message, for the session's life
		defer resp.Body.Close()
		for {
			ev, err := rd.Next()
			if err != nil {
				if c.ctx.Err() == nil {
					c.end(fmt.Errorf("upstream HTTP+SSE stream ended: %w", err))
				}
				return
			}
			if ev.Type == "" || ev.Type == "message" {
				c.deliverRaw(ev.Data, jsonrpc.ID{})
			}
		}
	}()
	pr, err := c.do(c.ctx, http.MethodPost, initBody, nil)
	if err != nil {
		return fmt.Errorf("upstream HTTP+SSE initialize: %v", err)
	}
	pr.Body.Close()
	if pr.StatusCode/100 != 2 {
		return fmt.Errorf("upstream HTTP+SSE initialize: HTTP %s", pr.Status)
	}
	select {
	case <-c.initDone:
		return nil
	case <-time.After(legacyWait):
		return fmt.Errorf("upstream HTTP+SSE: no initialize answer within %v", legacyWait)
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
}

// listenWait bounds how long listen waits for the GET stream's headers.
const listenWait = 2 * time.Second

// listen opens the standalone GET stream (2025-11-25 §Listening for
// Messages from the Server; a 405 means the server offers none) and returns
// once its response headers are in, or after listenWait.
func (c *httpConn) listen() {
	open := make(chan struct{})
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		resp, err := c.do(c.ctx, http.MethodGet, nil, http.Header{"Accept": {"text/event-stream"}})
		close(open)
		if err != nil {
			c.log.Debug("upstream GET stream", "err", err)
			return
		}
		if resp.StatusCode != http.StatusOK || !isEventStream(resp) {
			resp.Body.Close()
			return
		}
		c.stream(c.ctx, resp, jsonrpc.ID{})
	}()
	select {
	case <-open:
	case <-time.After(listenWait):
		c.log.Debug("upstream GET stream: no headers yet; going on", "after", listenWait)
	}
}

func isEventStream(resp *http.Response) bool {
	mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// stream reads an SSE stream until the response to call arrives (for a
// POST's stream) or the session ends (the standalone stream). A stream cut
// early is resumed with GET and Last-Event-ID after the server's retry delay
// (2025-11-25 §Resumability and Redelivery).
func (c *httpConn) stream(ctx context.Context, resp *http.Response, call jsonrpc.ID) {
	var lastID string
	var retry time.Duration
	fruitless := 0
	for {
		got, last, r, err := c.events(ctx, resp.Body, call)
		resp.Body.Close()
		if got || ctx.Err() != nil {
			return
		}
		if err != nil {
			c.failCall(call, err.Error())
			return
		}
		if c.isModern() {
			c.failCall(call, "upstream SSE stream ended without a response (2026-07-28 streams are not resumed)")
			return
		}
		if r > 0 {
			retry = r
		}
		if last != "" && last != lastID {
			lastID, fruitless = last, 0
		} else {
			fruitless++
		}
		if lastID == "" && call.IsValid() {
			c.failCall(call, "upstream SSE stream ended without a response and cannot be resumed (no event id)")
			return
		}
		if fruitless > c.cfg.MaxRetries {
			c.failCall(call, fmt.Sprintf("upstream SSE stream: %d reconnections without a new event", c.cfg.MaxRetries))
			return
		}
		delay := retry
		if delay <= 0 {
			delay = time.Duration(1<<min(fruitless, 5)) * 100 * time.Millisecond
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return
		}
		h := http.Header{"Accept": {"text/event-stream"}}
		if lastID != "" {
			h.Set("Last-Event-Id", lastID)
		}
		next, err := c.do(ctx, http.MethodGet, nil, h)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Debug("upstream SSE reconnect", "err", err)
			fruitless++
			resp = &http.Response{Body: http.NoBody}
			continue
		}
		if next.StatusCode == http.StatusMethodNotAllowed || next.StatusCode == http.StatusNotFound {
			next.Body.Close()
			c.failCall(call, fmt.Sprintf("upstream refused to resume the SSE stream: HTTP %s", next.Status))
			return
		}
		if next.StatusCode != http.StatusOK || !isEventStream(next) {
			next.Body.Close()
			resp = &http.Response{Body: http.NoBody}
			continue
		}
		resp = next
	}
}

// events reads SSE events and delivers their messages; it reports whether
// the response to call came, the last event id and the last retry delay
// seen, and an error that rules out resuming the stream (an event over the
// message limit).
func (c *httpConn) events(ctx context.Context, body io.Reader, call jsonrpc.ID) (got bool, lastID string, retry time.Duration, fatal error) {
	rd := plainio.NewSSEReader(body, c.cfg.MaxMessage)
	for {
		ev, err := rd.Next()
		switch {
		case errors.Is(err, plainio.ErrLineTooLong):
			return false, rd.LastID(), rd.Retry(), fmt.Errorf("upstream SSE event over the %d-byte message limit", c.cfg.MaxMessage)
		case err != nil:
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				c.log.Debug("upstream SSE stream", "err", err)
			}
			return false, rd.LastID(), rd.Retry(), nil
		}
		if ev.Type == "" || ev.Type == "message" {
			if c.deliverRaw(ev.Data, call) {
				return true, rd.LastID(), rd.Retry(), nil
			}
		}
	}
}
