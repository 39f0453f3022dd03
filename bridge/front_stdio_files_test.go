package bridge_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestStdioFrontStreamFilesRemoved: streams past -inline-limit become
// resource_links to complete files, in -stream-dir when it is set and
// else in a directory of the bridge's own under TMPDIR; when the host's
// session ends (EOF), the bridge exits 0 and no file is left behind
// (spec §10), the -stream-dir directory itself staying.
func TestStdioFrontStreamFilesRemoved(t *testing.T) {
	t.Parallel()
	cli := buildCLI(t)
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	for _, explicit := range []bool{true, false} {
		tmp, dir := t.TempDir(), t.TempDir()
		extra := []string{"-inline-limit", "1000"}
		if explicit {
			extra = append(extra, "-stream-dir", dir)
		}
		cmd := bridgeCmd(cli, srv, extra...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		h := startNDJSONHostCmd(t, cmd)
		h.initialize("2025-11-25")
		var paths []string
		for i, n := range []int64{5000, 7000} {
			h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"generate","arguments":{"bytes":%d}}}`, i+1, n))
			var r struct {
				Result struct {
					Content []struct {
						Type string `json:"type"`
						URI  string `json:"uri"`
						Size int64  `json:"size"`
					} `json:"content"`
				} `json:"result"`
			}
			line := h.read()
			if err := json.Unmarshal([]byte(line), &r); err != nil || len(r.Result.Content) == 0 || r.Result.Content[0].Type != "resource_link" {
				t.Fatalf("generate %d: %s (%v)", n, line, err)
			}
			u, err := url.Parse(r.Result.Content[0].URI)
			if err != nil || u.Scheme != "file" {
				t.Fatalf("link %q: %v", r.Result.Content[0].URI, err)
			}
			b, err := os.ReadFile(u.Path)
			if sum := sha256.Sum256(b); err != nil || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(n) {
				t.Fatalf("linked file %s: %v, %d bytes", u.Path, err, len(b))
			}
			want := dir
			if !explicit {
				want = tmp
			}
			if rel, err := filepath.Rel(want, u.Path); err != nil || strings.HasPrefix(rel, "..") {
				t.Fatalf("file %s is not under %s", u.Path, want)
			}
			paths = append(paths, u.Path)
		}
		h.exit() // exit 0 after EOF, nothing more on stdout
		for _, p := range paths {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("stream file %s left behind (stat: %v)", p, err)
			}
		}
		for _, d := range []string{dir, tmp} {
			if left, _ := os.ReadDir(d); len(left) != 0 {
				t.Errorf("explicit=%v: %s holds %d entries after the bridge exited, e.g. %s", explicit, d, len(left), left[0].Name())
			}
		}
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("the -stream-dir directory itself went: %v", err)
		}
	}
}
