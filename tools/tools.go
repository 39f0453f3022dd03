// Package tools serves MCP tools (tools/list and tools/call, MCP 2025-11-25
// server/tools) over a flow session. A tool's result may name execution
// streams (spec §5.2) next to ordinary MCP content.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"sort"

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

// Registry holds tools by name. It is built once and then only read, so it is
// safe for concurrent use.
type Registry struct {
	byName map[string]*Tool
	list   json.RawMessage
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
	names := make([]string, 0, len(ts))
	for n := range r.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	list := struct {
		Tools []*Tool `json:"tools"`
	}{}
	for _, n := range names {
		list.Tools = append(list.Tools, r.byName[n])
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	r.list = b
	return r, nil
}

// Register adds tools/list and tools/call to mux.
func (r *Registry) Register(mux flow.Mux) {
	mux["tools/list"] = flow.HandlerFunc(func(context.Context, *flow.Request) (any, error) { return r.list, nil })
	mux["tools/call"] = flow.HandlerFunc(r.call)
}

// Capabilities is the tools capability for the initialize result.
func (r *Registry) Capabilities() json.RawMessage {
	return json.RawMessage(`{"tools":{"listChanged":false}}`)
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
	if t == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "unknown tool: "+p.Name)
	}
	if len(p.Arguments) == 0 {
		p.Arguments = json.RawMessage("{}")
	}
	res, err := t.Func(ctx, req, p.Arguments)
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
