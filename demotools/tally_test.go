package demotools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestTally: tally exists only with a tally file; each call appends its key
// as one whole line, concurrent calls included, and returns the key; a key
// that is not one line is refused.
func TestTally(t *testing.T) {
	names := func(cfg demotools.Config) []string {
		var n []string
		for _, tool := range demotools.New(cfg) {
			n = append(n, tool.Name)
		}
		return n
	}
	t.Setenv(demotools.TallyEnv, "")
	if slices.Contains(names(demotools.Config{}), "tally") {
		t.Fatal("tally is there without a tally file")
	}
	path := filepath.Join(t.TempDir(), "tally")
	mux, caps := flowtest.ToolsMux(t, demotools.Config{TallyFile: path})
	srv := flowtest.Serve(t, flow.ServerConfig{Handler: mux, Capabilities: caps})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Logger: flowtest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	call := func(key string) (string, error) {
		r, err := s.Call(ctx, "tools/call", map[string]any{"name": "tally", "arguments": map[string]string{"key": key}})
		if err != nil {
			return "", err
		}
		var res struct {
			Content []struct{ Text string }
		}
		if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) != 1 {
			return "", fmt.Errorf("result %s: %v", r.Result, err)
		}
		return res.Content[0].Text, nil
	}
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			key := fmt.Sprintf("key-%d-%s", i, strings.Repeat("x", i))
			if got, err := call(key); err != nil || got != key {
				t.Errorf("tally %s: %q, %v", key, got, err)
			}
		})
	}
	wg.Wait()
	if _, err := call("two\nlines"); err == nil {
		t.Error("a key of two lines was taken")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	slices.Sort(lines)
	if len(lines) != n || len(slices.Compact(slices.Clone(lines))) != n {
		t.Fatalf("%d lines, want %d distinct:\n%s", len(lines), n, data)
	}
	for _, l := range lines {
		var i int
		if _, err := fmt.Sscanf(l, "key-%d-", &i); err != nil || l != fmt.Sprintf("key-%d-%s", i, strings.Repeat("x", i)) {
			t.Errorf("line %q is not a whole key", l)
		}
	}
}
