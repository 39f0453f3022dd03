package demotools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/tools"
)

// Toggled is the tool that toggle shows and hides.
const Toggled = "toggled"

// ToggledURI is the resource that says whether Toggled is shown: its text
// is "shown" or "hidden", and toggle reports its change to the clients
// subscribed to it (resources/subscribe of 2025, subscriptions/listen's
// resourceSubscriptions of 2026-07-28; spec §11.7).
const ToggledURI = "mcp-flow://toggled"

// Capabilities are the capabilities of a server of these tools and their
// resource: tools whose list changes (tools.Registry.Capabilities), and
// resources one may subscribe to (ToggledURI).
func Capabilities() json.RawMessage {
	return json.RawMessage(`{"tools":{"listChanged":true},"resources":{"subscribe":true}}`)
}

// Register adds reg's tools (tools.Registry.Register) and resources/list
// and resources/read of ToggledURI, as reg's Toggled tool stands, to mux.
func Register(mux flow.Mux, reg *tools.Registry) {
	reg.Register(mux)
	mux["resources/list"] = flow.HandlerFunc(func(context.Context, *flow.Request) (any, error) {
		return map[string]any{"resources": []map[string]string{{"uri": ToggledURI, "name": Toggled,
			"description": "\"shown\" or \"hidden\": whether the tool " + Toggled + " is listed (toggle changes it)", "mimeType": "text/plain"}}}, nil
	})
	mux["resources/read"] = flow.HandlerFunc(func(_ context.Context, req *flow.Request) (any, error) {
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(req.Params, &p) != nil || p.URI != ToggledURI {
			return nil, jsonrpc.NewError(jsonrpc.CodeResourceNotFound, "no resource "+p.URI+": this server has "+ToggledURI+" only")
		}
		return map[string]any{"contents": []map[string]string{{"uri": ToggledURI, "mimeType": "text/plain", "text": toggledState(reg.Hidden(Toggled))}}}, nil
	})
}

// toggledState is ToggledURI's text.
func toggledState(hidden bool) string {
	if hidden {
		return "hidden"
	}
	return "shown"
}

// toggleTools are toggle, which changes the server's tool list so that
// list changes can be seen (spec §11.7), and toggled, the tool it shows
// and hides (hidden at first).
func toggleTools() []tools.Tool {
	return []tools.Tool{
		{
			Name:        "toggle",
			Description: "Shows the tool " + Toggled + " if it is hidden, else hides it, and tells every client that the tool list changed (notifications/tools/list_changed: to 2025 sessions as it is, to 2026-07-28 clients on their subscriptions/listen) and those subscribed to " + ToggledURI + " that it was updated. Returns \"" + Toggled + " shown\" or \"" + Toggled + " hidden\".",
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
	srv.ResourceUpdated(ToggledURI)
	return &tools.Result{Content: []any{tools.NewText(Toggled + " " + toggledState(hide))}}, nil
}
