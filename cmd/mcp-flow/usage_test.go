//go:build linux

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestUsageListsEveryCommand: `mcp-flow -h` names every command, ui
// included, and exits 0; so do -h after a command.
func TestUsageListsEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"call", "-h"}, {"ui", "-h"}, {"bridge", "http", "-h"}} {
		_, errOut, code := runCLI(t, cli(t), args...)
		if code != exitOK {
			t.Errorf("%v: exit %d, want 0", args, code)
		}
		for _, cmd := range []string{"\n  tools ", "\n  call TOOL ", "\n  ping ", "\n  bridge stdio|http ", "\n  ui [URL] "} {
			if !strings.Contains(errOut, cmd) {
				t.Errorf("%v: the usage does not list %q:\n%s", args, strings.TrimSpace(cmd), errOut)
			}
		}
	}
}

// TestListenHelpNamesBothDefaults: -listen is shared by bridge http (its
// default 127.0.0.1:8080) and ui (127.0.0.1:7433); its help says both, and
// not that ui's default is the bridge's.
func TestListenHelpNamesBothDefaults(t *testing.T) {
	t.Parallel()
	_, errOut, _ := runCLI(t, cli(t), "ui", "-h")
	i := strings.Index(errOut, "  -listen")
	if i < 0 {
		t.Fatalf("no -listen in:\n%s", errOut)
	}
	help := errOut[i:]
	if j := strings.Index(help[1:], "\n  -"); j >= 0 {
		help = help[:j+1]
	}
	for _, want := range []string{"for ui, of the inspector page (default " + defaultUIListen + ")", "bridge http", "default " + defaultBridgeListen} {
		if !strings.Contains(help, want) {
			t.Errorf("-listen's help does not say %q:\n%s", want, help)
		}
	}
	if strings.Contains(help, `(default "`) {
		t.Errorf("-listen's help gives one default for both:\n%s", help)
	}
}

// TestFlagsAfterCommand: flags may follow the command (and, for call, the
// tool's name), as they may for bridge and ui: `call -json echo …` takes
// -json as a flag, not as the tool's name; "--" ends the flags.
func TestFlagsAfterCommand(t *testing.T) {
	t.Parallel()
	base, _ := toolsServer(t, nil)
	out, errOut, code := runCLI(t, cli(t), append(base, "call", "-json", "echo", "text=hi")...)
	var res struct {
		Content []struct{ Text string }
	}
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil || len(res.Content) != 1 || res.Content[0].Text != "hi" {
		t.Fatalf("call -json echo: exit %d, %q, stderr:\n%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, cli(t), append(base, "call", "echo", "-json", "text=hi")...)
	if code != exitOK || !strings.HasPrefix(out, `{"content":`) {
		t.Fatalf("call echo -json: exit %d, %q, stderr:\n%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, cli(t), append(base, "tools", "-json")...)
	if code != exitOK || !strings.HasPrefix(out, `{"tools":`) {
		t.Fatalf("tools -json: exit %d, %q, stderr:\n%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, cli(t), append(base, "ping", "-encoding", "json")...)
	if code != exitOK || !strings.Contains(out, "(encoding json)") {
		t.Fatalf("ping -encoding json: exit %d, %q, stderr:\n%s", code, out, errOut)
	}
	// After "--", "-json" is an argument of the tool (and not key=value).
	_, errOut, code = runCLI(t, cli(t), append(base, "call", "echo", "--", "-json")...)
	if code != exitUsage || !strings.Contains(errOut, `argument "-json" is neither`) {
		t.Fatalf("call echo -- -json: exit %d, stderr:\n%s", code, errOut)
	}
	_, errOut, code = runCLI(t, cli(t), append(base, "call", "-nope", "echo")...)
	if code != exitUsage || !strings.Contains(errOut, "-nope") {
		t.Fatalf("call -nope echo: exit %d, stderr:\n%s", code, errOut)
	}
	// bridge and ui parse the same way: a flag after the server URL is a
	// flag (-h: the usage, exit 0; before, "at most one server URL", 2).
	for _, c := range [][]string{{"bridge", "stdio"}, {"bridge", "http"}, {"ui"}} {
		_, errOut, code = runCLI(t, cli(t), append(c, "https://127.0.0.1:1/mcp-flow", "-h")...)
		if code != exitOK || !strings.Contains(errOut, "usage: mcp-flow") {
			t.Fatalf("%v URL -h: exit %d, stderr:\n%s", c, code, errOut)
		}
	}
}
