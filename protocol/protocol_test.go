package protocol

import (
	"slices"
	"testing"
)

// TestMCPVersionsNewestFirst: a server offers MCPVersions()[0] to a client
// asking for a revision it does not know, and code compares revisions as
// strings (bridge.BatchesAllowed), so the list must be strictly descending
// as strings and start with MCPLatest.
func TestMCPVersionsNewestFirst(t *testing.T) {
	v := MCPVersions()
	if v[0] != MCPLatest {
		t.Errorf("MCPVersions()[0] = %q, want MCPLatest %q", v[0], MCPLatest)
	}
	for i := 1; i < len(v); i++ {
		if v[i-1] <= v[i] {
			t.Errorf("MCPVersions() = %q: %q is not newer than %q", v, v[i-1], v[i])
		}
	}
	v[0] = "changed"
	if slices.Contains(MCPVersions(), "changed") {
		t.Error("MCPVersions returns a shared slice: a caller changed it for everyone")
	}
}

// TestIsChange: the four change notifications of a subscriptions/listen,
// and not the other notifications.
func TestIsChange(t *testing.T) {
	for _, m := range []string{MethodToolsListChanged, MethodPromptsListChanged, MethodResourcesListChanged, MethodResourceUpdated} {
		if !IsChange(m) {
			t.Errorf("IsChange(%q) = false", m)
		}
	}
	for _, m := range []string{MethodProgress, MethodLogMessage, MethodSubscriptionsAcknowledged, "notifications/roots/list_changed"} {
		if IsChange(m) {
			t.Errorf("IsChange(%q) = true", m)
		}
	}
}
