package flow

import (
	"context"
	"encoding/json"

	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// resources/subscribe and resources/unsubscribe of 2025 (spec §11.7): a
// flow server that answers its own initialize serves them itself for its
// 2025 sessions, as it serves subscriptions/listen for 2026-07-28 ones, and
// Server.ResourceUpdated reaches both.

// The 2025 resource subscription methods.
const (
	methodSubscribe   = "resources/subscribe"
	methodUnsubscribe = "resources/unsubscribe"
)

// servesSubscribe reports whether the session answers req's
// resources/subscribe or resources/unsubscribe itself: a 2025 session (a
// 2026-07-28 request has no such method: it listens) on a server that
// answers its own initialize (a bridge's Handler passes them on).
func (s *Session) servesSubscribe(req *Request) bool {
	return s.server && (req.Method == methodSubscribe || req.Method == methodUnsubscribe) &&
		!s.stateless.Load() && s.srv.cfg.OnInitialize == nil
}

// subscribe serves resources/subscribe and resources/unsubscribe: params
// {uri}; a server whose capabilities do not announce resources.subscribe
// answers -32601, as the method is not its; a missing uri is -32602.
// Subscribing twice is once; unsubscribing what is not subscribed is no
// error. The result is {}.
func (s *Session) subscribe(_ context.Context, req *Request) (any, error) {
	srv := s.srv.server
	var caps struct {
		Resources *struct{ Subscribe bool } `json:"resources"`
	}
	if json.Unmarshal(s.srv.cfg.Capabilities, &caps) != nil || caps.Resources == nil || !caps.Resources.Subscribe {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, req.Method+": this server does not announce resources.subscribe")
	}
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(req.Params, &p) != nil || p.URI == "" {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, req.Method+" needs params {uri}")
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	subs := srv.resourceSubs[s]
	if req.Method == methodUnsubscribe {
		delete(subs, p.URI)
		return struct{}{}, nil
	}
	if subs == nil {
		if srv.resourceSubs == nil {
			srv.resourceSubs = map[*Session]map[string]struct{}{}
		}
		subs = map[string]struct{}{}
		srv.resourceSubs[s] = subs
	}
	subs[p.URI] = struct{}{}
	return struct{}{}, nil
}

// subscribedTo returns the READY 2025 sessions subscribed to uri; srv.mu
// is held.
func (s *Server) subscribedTo(uri string) []*Session {
	var out []*Session
	for sess, subs := range s.resourceSubs {
		if _, ok := subs[uri]; ok && sess.State() == StateReady {
			out = append(out, sess)
		}
	}
	return out
}
