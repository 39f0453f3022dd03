package upstream

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// A 2025 session of a 2026-07-28 upstream (spec §11.7, "The upstreams"):
// such an upstream sends no change unasked (no GET stream) and has no
// resources/subscribe, so the bridge holds a subscriptions/listen upstream
// in the session's name, for every list change the upstream announces and
// the resources the session subscribed to, and turns its events into the
// 2025 notifications the session expects.

// replacedListenWait bounds how long the bridge waits for the answer of a
// subscription it replaced before it opens the next (relisten): a go-sdk
// server answers at once (its handler returns when cancelled); a server
// that answers a cancelled request not at all costs each resubscribe this.
// Over Streamable HTTP (requestScoped) nothing is waited for.
const replacedListenWait = 2 * time.Second

// requestScoped is a link whose requests each end with a stream of their
// own (Streamable HTTP: a cancel closes the request's response stream, and
// a 2026-07-28 server keeps nothing of a request past it): a replaced
// subscription's answer is not waited for, none comes.
type requestScoped interface{ requestScoped() }

// legacyListen is one subscription the bridge holds upstream for a 2025
// session: id is its upstream request id; acked is closed by its
// acknowledgement, done when the request has ended.
type legacyListen struct {
	id      jsonrpc.ID
	cancel  context.CancelFunc
	acked   chan struct{}
	ackOnce sync.Once
	done    chan struct{}
}

// upFilter is the subscription filter for every list change the
// capabilities caps (a DiscoverResult's) announce and, when they announce
// resources.subscribe, uris; subscribe reports that they do.
func upFilter(caps json.RawMessage, uris []string) (want flow.Subscriptions, subscribe bool) {
	var c struct {
		Tools     *struct{ ListChanged bool }            `json:"tools"`
		Prompts   *struct{ ListChanged bool }            `json:"prompts"`
		Resources *struct{ ListChanged, Subscribe bool } `json:"resources"`
	}
	_ = json.Unmarshal(caps, &c) // none that read: nothing to ask for
	want = flow.Subscriptions{
		ToolsListChanged:     c.Tools != nil && c.Tools.ListChanged,
		PromptsListChanged:   c.Prompts != nil && c.Prompts.ListChanged,
		ResourcesListChanged: c.Resources != nil && c.Resources.ListChanged,
	}
	subscribe = c.Resources != nil && c.Resources.Subscribe
	if subscribe {
		want.ResourceSubscriptions = uris
	}
	return want, subscribe
}

// listenForLegacy opens the 2025 session's subscription upstream, once the
// session is READY (ServerConfig.OnSession: no notification before the
// initialize result), unless the session's own resources/subscribe opened
// one already: OnSession runs on a goroutine of its own and may come after
// it, and replacing that subscription would race its cleanup upstream (the
// go-sdk keeps a session's resource subscriptions per session, so a
// listen's end unsubscribes URIs the next one asked for).
func (c *upConn) listenForLegacy() {
	c.relistenMu.Lock()
	defer c.relistenMu.Unlock()
	c.mu.Lock()
	open := c.legacy != nil
	c.mu.Unlock()
	if !open {
		c.relistenLocked()
	}
}

// relisten (re)opens the 2025 session's subscription upstream for what
// upFilter asks with the URIs the session subscribed to, ending the one
// before (a listen's filter is fixed), and returns it (nil when there is
// nothing to ask for). It lasts as long as the session or until the next
// relisten; one the upstream ends is logged (WARN) and not opened again.
func (c *upConn) relisten() *legacyListen {
	c.relistenMu.Lock()
	defer c.relistenMu.Unlock()
	return c.relistenLocked()
}

// relistenLocked is relisten with relistenMu held.
func (c *upConn) relistenLocked() *legacyListen {
	c.mu.Lock()
	uris := slices.Sorted(maps.Keys(c.legacyURIs))
	old := c.legacy
	c.legacy = nil
	c.mu.Unlock()
	if old != nil {
		// The new listen goes once the old one has ended upstream: a
		// go-sdk server keeps a session's subscriptions per session, not
		// per listen, and the end of a listen unsubscribes its URIs and
		// list changes; ended after the new one began, it would undo what
		// the new one asked for. Its answer tells (waited for up to
		// replacedListenWait).
		old.cancel()
		<-old.done
	}
	want, _ := upFilter(c.upCaps, uris)
	if want.Empty() {
		return nil
	}
	p, _ := json.Marshal(map[string]any{"notifications": want})
	params, err := editMeta(p, modernMeta(c.clientCaps, c.clientInfo)...)
	if err != nil {
		return nil // our own params: cannot happen
	}
	ctx, cancel := context.WithCancel(c.s.Context())
	l := &legacyListen{id: jsonrpc.Int64ID(c.nextID.Add(1)), cancel: cancel, acked: make(chan struct{}), done: make(chan struct{})}
	c.mu.Lock()
	c.legacy = l
	c.mu.Unlock()
	go func() {
		defer close(l.done)
		wait := replacedListenWait
		if _, ok := c.link.(requestScoped); ok {
			wait = 0
		}
		_, err := c.callUntil(ctx, l.id, protocol.MethodListen, params, wait)
		if ctx.Err() == nil {
			c.u.log.Warn("the upstream ended the subscription the bridge holds for a 2025 session: its changes no longer reach it", "err", err)
		}
		cancel()
		c.mu.Lock()
		if c.legacy == l {
			c.legacy = nil
		}
		c.mu.Unlock()
	}()
	return l
}

// subscribeLegacy serves a 2025 session's resources/subscribe or
// resources/unsubscribe toward a 2026-07-28 upstream (spec §11.7): the
// session's URIs change and its subscription upstream is opened again
// with them; each is answered {} once the upstream has acknowledged the
// new subscription, so that an update after the answer reaches the
// session.
// An upstream that does not announce resources.subscribe gets -32601, as
// the flow server answers.
func (c *upConn) subscribeLegacy(ctx context.Context, req *flow.Request) (any, error) {
	if _, ok := upFilter(c.upCaps, nil); !ok {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, req.Method+": the upstream does not announce resources.subscribe")
	}
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(req.Params, &p) != nil || p.URI == "" {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, req.Method+" needs params {uri}")
	}
	c.mu.Lock()
	if req.Method == methodUnsubscribe {
		delete(c.legacyURIs, p.URI)
	} else {
		if c.legacyURIs == nil {
			c.legacyURIs = map[string]struct{}{}
		}
		c.legacyURIs[p.URI] = struct{}{}
	}
	c.mu.Unlock()
	l := c.relisten()
	for l != nil {
		select {
		case <-l.acked:
			return struct{}{}, nil
		case <-l.done:
			// Replaced before its acknowledgement by a later relisten (the
			// session's own at READY may run after this request's): that
			// one asks for this URI too, and answers for it.
			c.mu.Lock()
			next := c.legacy
			c.mu.Unlock()
			if next == nil || next == l {
				return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, req.Method+": the upstream did not acknowledge the subscription (subscriptions/listen) the bridge holds for it")
			}
			l = next
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	return struct{}{}, nil
}

// The 2025 resource subscription methods.
const (
	methodSubscribe   = "resources/subscribe"
	methodUnsubscribe = "resources/unsubscribe"
)
