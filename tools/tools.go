// Package tools serves MCP tools (tools/list and tools/call, MCP 2025-11-25
// server/tools) over a flow session. A tool's result may name execution
// streams (spec §5.2) next to ordinary MCP content.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// Func runs a tool. It returns the result, or an error: a *jsonrpc.Error is a
// protocol error; any other error is a tool error, reported in a result with
// isError set (as MCP asks, so that the model can see it).
type Func func(ctx context.Context, req *flow.Request, args json.RawMessage) (*Result, error)

// Tool is one tool: its MCP description and its function.
type Tool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Func        Func            `json:"-"`
	// Hidden leaves the tool out of tools/list and refuses its calls
	// until Registry.Hide shows it.
	Hidden bool `json:"-"`
}

// Result is the result of tools/call. Content holds MCP content blocks and
// flow.StreamRef blocks.
type Result struct {
	Content           []any `json:"content"`
	StructuredContent any   `json:"structuredContent,omitempty"`
	IsError           bool  `json:"isError,omitempty"`
}

// Text is MCP text content.
type Text struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// NewText returns a text content block.
func NewText(s string) Text { return Text{Type: "text", Text: s} }

// Registry holds tools by name. Its tools are fixed when it is built; Hide
// shows or hides one. It is safe for concurrent use.
type Registry struct {
	byName map[string]*Tool // only read after New
	mu     sync.Mutex       // serialises Hide
	hidden atomic.Pointer[map[string]bool]
	list   atomic.Pointer[json.RawMessage]
}

// New returns a registry of the given tools. Tool names must be unique.
func New(ts ...Tool) (*Registry, error) {
	r := &Registry{byName: map[string]*Tool{}}
	for i := range ts {
		t := &ts[i]
		if t.Name == "" || t.Func == nil {
			return nil, errors.New("tools: a tool needs a name and a Func")
		}
		if r.byName[t.Name] != nil {
			return nil, errors.New("tools: duplicate tool " + t.Name)
		}
		if len(t.InputSchema) == 0 {
			t.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		r.byName[t.Name] = t
	}
	hidden := map[string]bool{}
	for _, t := range ts {
		if t.Hidden {
			hidden[t.Name] = true
		}
	}
	if err := r.publish(hidden); err != nil {
		return nil, err
	}
	return r, nil
}

// publish makes hidden the hidden set and builds tools/list's result.
func (r *Registry) publish(hidden map[string]bool) error {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		if !hidden[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	list := struct {
		Tools []*Tool `json:"tools"`
	}{Tools: []*Tool{}}
	for _, n := range names {
		list.Tools = append(list.Tools, r.byName[n])
	}
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	raw := json.RawMessage(b)
	r.hidden.Store(&hidden)
	r.list.Store(&raw)
	return nil
}

// ErrUnknownTool is Hide's error for a name the registry does not hold.
var ErrUnknownTool = errors.New("tools: no such tool")

// Hide hides the named tool (tools/list leaves it out, tools/call refuses
// it) or shows it again, and reports whether that changed the list: the
// caller then tells the clients (flow.Server.ListChanged, spec §11.7).
func (r *Registry) Hide(name string, hide bool) (changed bool, err error) {
	if r.byName[name] == nil {
		return false, ErrUnknownTool
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.hidden.Load()
	if old[name] == hide {
		return false, nil
	}
	next := make(map[string]bool, len(old)+1)
	for n, h := range old {
		next[n] = h
	}
	next[name] = hide
	return true, r.publish(next)
}

// Hidden reports whether the named tool is hidden.
func (r *Registry) Hidden(name string) bool { return (*r.hidden.Load())[name] }

// registryKey is the context key of the registry a tool runs in.
type registryKey struct{}

// Of returns the registry whose tools/call runs the tool that ctx was
// given to, or nil.
func Of(ctx context.Context) *Registry {
	r, _ := ctx.Value(registryKey{}).(*Registry)
	return r
}

// Register adds tools/list and tools/call to mux.
func (r *Registry) Register(mux flow.Mux) {
	mux["tools/list"] = flow.HandlerFunc(func(context.Context, *flow.Request) (any, error) { return *r.list.Load(), nil })
	mux["tools/call"] = flow.HandlerFunc(r.call)
}

// Capabilities is the tools capability for the initialize result: the list
// may change (Hide), so listChanged is true.
func (r *Registry) Capabilities() json.RawMessage {
	return json.RawMessage(`{"tools":{"listChanged":true}}`)
}

func (r *Registry) call(ctx context.Context, req *flow.Request) (any, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if len(req.Params) == 0 || json.Unmarshal(req.Params, &p) != nil || p.Name == "" {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "tools/call needs params {name, arguments}")
	}
	t := r.byName[p.Name]
	if t == nil || r.Hidden(p.Name) {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "unknown tool: "+p.Name)
	}
	if len(p.Arguments) == 0 {
		p.Arguments = json.RawMessage("{}")
	}
	res, err := t.Func(context.WithValue(ctx, registryKey{}, r), req, p.Arguments)
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return nil, je
		}
		return &Result{Content: []any{NewText(err.Error())}, IsError: true}, nil
	}
	if res.Content == nil {
		res.Content = []any{}
	}
	return res, nil
}
