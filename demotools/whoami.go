package demotools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/tools"
)

// Whoami is the structuredContent of the whoami tool: what the access
// token of the caller's session says (docs/spec.md §9.1), or Authenticated
// false when the server checks no tokens.
type Whoami struct {
	Authenticated bool     `json:"authenticated"`
	Subject       string   `json:"subject,omitempty"`
	Scopes        []string `json:"scopes,omitempty"`
	// ExpiresAt is the token's expiry (RFC 3339), when it has one.
	ExpiresAt string `json:"expiresAt,omitempty"`
}

func whoamiTool() tools.Tool {
	return tools.Tool{
		Name:        "whoami",
		Description: "Returns who the caller is: the subject, scopes and expiry of the access token its session presented (docs/spec.md §9.1), or anonymous when the server checks no tokens.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		Func:        whoami,
	}
}

func whoami(_ context.Context, req *flow.Request, _ json.RawMessage) (*tools.Result, error) {
	info := req.Session.TokenInfo()
	if info == nil {
		return &tools.Result{Content: []any{tools.NewText("anonymous: the server checks no access tokens")},
			StructuredContent: Whoami{}}, nil
	}
	w := Whoami{Authenticated: true, Subject: info.UserID, Scopes: info.Scopes}
	if !info.Expiration.IsZero() {
		w.ExpiresAt = info.Expiration.UTC().Format(time.RFC3339)
	}
	text := fmt.Sprintf("subject %q, scopes [%s]", w.Subject, strings.Join(w.Scopes, " "))
	if w.ExpiresAt != "" {
		text += ", expires " + w.ExpiresAt
	}
	return &tools.Result{Content: []any{tools.NewText(text)}, StructuredContent: w}, nil
}
