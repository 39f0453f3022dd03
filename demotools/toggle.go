package demotools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/tools"
)

// Toggled is the tool that toggle shows and hides.
const Toggled = "toggled"

// toggleTools are toggle, which changes the server's tool list so that
// list changes can be seen (spec §11.7), and toggled, the tool it shows
// and hides (hidden at first).
func toggleTools() []tools.Tool {
	return []tools.Tool{
		{
			Name:        "toggle",
			Description: "Shows the tool " + Toggled + " if it is hidden, else hides it, and tells every client that the tool list changed (notifications/tools/list_changed: to 2025 sessions as it is, to 2026-07-28 clients on their subscriptions/listen). Returns \"" + Toggled + " shown\" or \"" + Toggled + " hidden\".",
			InputSchema: json.RawMessage(`{"type":"object"}`),
			Func:        toggle,
		},
		{
			Name:        Toggled,
			Description: "Returns \"here\". Listed only while toggle has shown it.",
			InputSchema: json.RawMessage(`{"type":"object"}`),
			Func: func(context.Context, *flow.Request, json.RawMessage) (*tools.Result, error) {
				return &tools.Result{Content: []any{tools.NewText("here")}}, nil
			},
			Hidden: true,
		},
	}
}

func toggle(ctx context.Context, req *flow.Request, _ json.RawMessage) (*tools.Result, error) {
	reg, srv := tools.Of(ctx), req.Session.Server()
	if reg == nil || srv == nil {
		return nil, errors.New("toggle runs only in a flow server's tool registry")
	}
	hide := !reg.Hidden(Toggled)
	if _, err := reg.Hide(Toggled, hide); err != nil {
		return nil, err
	}
	if err := srv.ListChanged(protocol.MethodToolsListChanged); err != nil {
		return nil, err
	}
	state := "shown"
	if hide {
		state = "hidden"
	}
	return &tools.Result{Content: []any{tools.NewText(Toggled + " " + state)}}, nil
}
