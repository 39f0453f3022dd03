package flow

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
)

// Subscriptions is MCP 2026-07-28's SubscriptionFilter (SEP-2575): what a
// subscriptions/listen request asks for in params.notifications, and what
// the server's notifications/subscriptions/acknowledged says it honours.
// The shape is the TypeScript SDK v2's SubscriptionFilterSchema and go-sdk
// v1.8's mcp.NotificationSubscriptions (spec §11.7).
type Subscriptions struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// Empty reports whether s asks for nothing.
func (s Subscriptions) Empty() bool {
	return !s.ToolsListChanged && !s.PromptsListChanged && !s.ResourcesListChanged && len(s.ResourceSubscriptions) == 0
}

// wants reports whether a subscription for s hears the change notification
// method (about uri, for resources/updated).
func (s Subscriptions) wants(method, uri string) bool {
	switch method {
	case protocol.MethodToolsListChanged:
		return s.ToolsListChanged
	case protocol.MethodPromptsListChanged:
		return s.PromptsListChanged
	case protocol.MethodResourcesListChanged:
		return s.ResourcesListChanged
	case protocol.MethodResourceUpdated:
		return slices.Contains(s.ResourceSubscriptions, uri)
	}
	return false
}

// honoured is the part of want that a server announcing caps can send:
// listChanged of tools, prompts and resources, and resources.subscribe for
// resource URIs, as go-sdk v1.8's allowedSubscriptions decides.
func honoured(caps json.RawMessage, want Subscriptions) Subscriptions {
	var c struct {
		Tools     *struct{ ListChanged bool } `json:"tools"`
		Prompts   *struct{ ListChanged bool } `json:"prompts"`
		Resources *struct {
			ListChanged bool
			Subscribe   bool
		} `json:"resources"`
	}
	_ = json.Unmarshal(caps, &c) // capabilities that do not read honour nothing
	var h Subscriptions
	h.ToolsListChanged = want.ToolsListChanged && c.Tools != nil && c.Tools.ListChanged
	h.PromptsListChanged = want.PromptsListChanged && c.Prompts != nil && c.Prompts.ListChanged
	h.ResourcesListChanged = want.ResourcesListChanged && c.Resources != nil && c.Resources.ListChanged
	if c.Resources != nil && c.Resources.Subscribe {
		h.ResourceSubscriptions = slices.Clone(want.ResourceSubscriptions)
	}
	return h
}

// listener is one subscriptions/listen request being served. mu is held
// while the acknowledgement is sent, so that no change notification for
// the subscription goes before it (SEP-2575: the acknowledgement is the
// first message naming the subscription).
type listener struct {
	s    *Session
	id   jsonrpc.ID
	want Subscriptions
	mu   sync.Mutex
}

// listenParams are subscriptions/listen's params.
type listenParams struct {
	Notifications *Subscriptions `json:"notifications"`
}

// subscriptionMeta is the _meta naming subscription id.
func subscriptionMeta(id jsonrpc.ID) map[string]json.RawMessage {
	return map[string]json.RawMessage{protocol.MetaSubscriptionID: json.RawMessage(id.Raw())}
}

// servesListen reports whether the session answers req's
// subscriptions/listen itself (spec §11.7): a 2026-07-28 request on a
// server that answers its own initialize (a bridge's Handler passes it on).
func (s *Session) servesListen(req *Request) bool {
	return s.server && req.Method == protocol.MethodListen && s.stateless.Load() && s.srv.cfg.OnInitialize == nil
}

// listen serves a subscriptions/listen request (spec §11.7): it sends the
// acknowledgement with the honoured part of the filter, then holds the
// request open while Server.ListChanged and Server.ResourceUpdated send
// it changes, until the client cancels it (answered -32800 by $/cancel)
// or a shutdown drains the session, when it ends with the graceful result
// {_meta: {subscriptionId}}. A filter of which nothing is honoured ends
// at once with that result, as go-sdk v1.8's server does.
func (s *Session) listen(ctx context.Context, req *Request) (any, error) {
	return req.ServeListen(ctx, s.srv.cfg.Capabilities)
}

// ServeListen serves req, a 2026-07-28 subscriptions/listen, as a flow
// server does (spec §11.7), honouring what caps announce: for a Handler
// whose server cannot (a bridge's 2025 upstream). Session.Changed sends
// its changes; so do Server.ListChanged and Server.ResourceUpdated.
func (req *Request) ServeListen(ctx context.Context, caps json.RawMessage) (any, error) {
	s := req.Session
	var p listenParams
	if json.Unmarshal(req.Params, &p) != nil || p.Notifications == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "subscriptions/listen needs params.notifications, a SubscriptionFilter (MCP 2026-07-28)")
	}
	l := &listener{s: s, id: req.ID, want: honoured(caps, *p.Notifications)}
	done := map[string]any{"_meta": subscriptionMeta(req.ID)}
	srv := s.srv.server
	if srv == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "subscriptions/listen is served by servers only")
	}
	l.mu.Lock()
	srv.mu.Lock()
	if srv.listeners == nil {
		srv.listeners = map[*listener]struct{}{}
	}
	srv.listeners[l] = struct{}{}
	srv.mu.Unlock()
	defer func() {
		srv.mu.Lock()
		delete(srv.listeners, l)
		srv.mu.Unlock()
	}()
	err := s.Notify(protocol.MethodSubscriptionsAcknowledged, struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		Notifications Subscriptions              `json:"notifications"`
	}{subscriptionMeta(req.ID), l.want})
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if l.want.Empty() {
		return done, nil
	}
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-s.Draining():
		return done, nil
	}
}

// Server returns the server that accepted the session, or nil on a
// client: a handler reports changes through it (ListChanged, spec §11.7).
func (s *Session) Server() *Server { return s.srv.server }

// ErrNotChange is ListChanged's error for a method that is not one of
// MCP's three list_changed notifications.
var ErrNotChange = errors.New("flow: not a list_changed notification (tools, prompts or resources)")

// ListChanged tells every client that the server's list of tools, prompts
// or resources changed (spec §11.7): method is
// notifications/tools/list_changed, notifications/prompts/list_changed or
// notifications/resources/list_changed. A 2025 session (initialized) gets
// the notification as it is, unasked, as 2025-11-25 has it; each
// 2026-07-28 subscriptions/listen that asked for it gets it with _meta
// naming the subscription. It returns once every session has been written
// to, each on its own goroutine (a session that does not read holds only
// its own write); a session's write error is not returned (that session is
// ending).
func (s *Server) ListChanged(method string) error {
	switch method {
	case protocol.MethodToolsListChanged, protocol.MethodPromptsListChanged, protocol.MethodResourcesListChanged:
	default:
		return ErrNotChange
	}
	s.publish(method, "", true)
	return nil
}

// ResourceUpdated tells each 2026-07-28 subscriptions/listen whose
// resourceSubscriptions name uri, and each 2025 session that subscribed to
// uri with resources/subscribe (subscribe.go), that the resource changed
// (notifications/resources/updated {uri}, spec §11.7).
func (s *Server) ResourceUpdated(uri string) {
	s.publish(protocol.MethodResourceUpdated, uri, false)
}

// Changed sends a change notification (one of the three list_changed
// methods, or resources/updated about uri) to this session's own
// subscriptions that want it (spec §11.7), and to nothing else: a bridge
// passes on its upstream's changes this way. It returns once they are
// written.
func (s *Session) Changed(method, uri string) {
	if s.srv.server != nil {
		s.srv.server.publishTo(s, method, uri, false)
	}
}

// publish sends method to the subscriptions that want it and, when legacy
// is set, to every READY 2025 session.
func (s *Server) publish(method, uri string, legacy bool) { s.publishTo(nil, method, uri, legacy) }

// publishTo is publish to the subscriptions of only, when not nil.
func (s *Server) publishTo(only *Session, method, uri string, legacy bool) {
	var (
		targets []*listener
		olds    []*Session
	)
	s.mu.Lock()
	for l := range s.listeners {
		if (only == nil || l.s == only) && l.want.wants(method, uri) {
			targets = append(targets, l)
		}
	}
	if legacy {
		for sess := range s.sessions {
			if sess.State() == StateReady && !sess.stateless.Load() {
				olds = append(olds, sess)
			}
		}
	}
	var updated []*Session // 2025 sessions subscribed to uri (never also legacy: not a list change)
	if only == nil && method == protocol.MethodResourceUpdated {
		updated = s.subscribedTo(uri)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range targets {
		wg.Go(func() {
			params := map[string]any{"_meta": subscriptionMeta(l.id)}
			if uri != "" {
				params["uri"] = uri
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			if err := l.s.Notify(method, params); err != nil {
				l.s.log.Debug("change not sent", "method", method, "err", err)
			}
		})
	}
	var params any // a 2025 session's: none for a list change
	if len(updated) > 0 {
		olds, params = updated, map[string]string{"uri": uri}
	}
	for _, sess := range olds {
		wg.Go(func() {
			if err := sess.Notify(method, params); err != nil {
				sess.log.Debug("change not sent", "method", method, "err", err)
			}
		})
	}
	wg.Wait()
}

// ---- the client's side ----

// WithNotifications routes to f, instead of Hooks.Notification, each
// notification whose _meta io.modelcontextprotocol/subscriptionId names
// this call: a subscriptions/listen's acknowledgement and changes (MCP
// 2026-07-28, spec §11.7). f runs on the session's reading goroutine, in
// the order they came, and must not block.
func WithNotifications(f func(*jsonrpc.Request)) CallOption {
	return func(c *call) { c.onNotify = f }
}

// Listen opens a subscriptions/listen on a 2026-07-28 session (spec
// §11.7) and gives each of its notifications to on, the acknowledgement
// first, until ctx ends (then $/cancel ends it and Listen returns ctx's
// error) or the server ends it (a shutdown: its result, with a nil error).
// on runs as WithNotifications says.
func (s *Session) Listen(ctx context.Context, want Subscriptions, on func(*jsonrpc.Request)) (*Response, error) {
	return s.Call(ctx, protocol.MethodListen, listenParams{Notifications: &want}, WithNotifications(on))
}

// routeToCall gives n to the call its _meta subscriptionId names, if that
// call asked for its notifications (WithNotifications).
func (s *Session) routeToCall(n *jsonrpc.Request) bool {
	v := mcpjson.MetaValue(n.Params, protocol.MetaSubscriptionID)
	if v == nil {
		return false
	}
	id, err := jsonrpc.ParseID(v)
	if err != nil {
		return false
	}
	s.mu.Lock()
	c := s.calls[id]
	s.mu.Unlock()
	if c == nil || c.onNotify == nil {
		return false
	}
	c.onNotify(n)
	return true
}
