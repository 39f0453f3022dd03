package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun merges two runs' lists: the n slowest of both, slowest first,
// the module's prefix cut, "race" kept, minutes read as durations.
func TestRun(t *testing.T) {
	in := strings.Join([]string{
		"race github.com/mcp-flow/mcp-flow/codec TestTruncated 56.59s",
		"race github.com/mcp-flow/mcp-flow/flow TestLarge/sub 4.2s",
		"github.com/mcp-flow/mcp-flow/js TestSDKClients 1m5.5s",
		"github.com/mcp-flow/mcp-flow/interop TestOfficial 12s",
		"",
	}, "\n")
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out, 3); err != nil {
		t.Fatal(err)
	}
	want := "    65.5s  js TestSDKClients\n" +
		"    56.6s  race codec TestTruncated\n" +
		"    12.0s  interop TestOfficial\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	if err := run(strings.NewReader("pkg Test soon\n"), &out, 3); err == nil {
		t.Fatal("a line without a duration: no error")
	}
}
