package bridge_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/testtools"
)

// TestHTTPFrontServesLargeStreams (issue 12): an execution stream past the
// inline limit becomes a resource_link to an http URL on the front itself,
// with an unguessable token; a GET streams it back, byte for byte, while
// the session lives; after the session ends it gets 404 and nothing is
// left on disk. Past MaxSessionOffload the call fails with -32603.
func TestHTTPFrontServesLargeStreams(t *testing.T) {
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	dir := t.TempDir()
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(), InlineLimit: 1 << 20, StreamDir: dir,
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: flowtest.Quiet}, MaxSessionOffload: 5 << 20})
	ts := httptest.NewServer(front)
	t.Cleanup(ts.Close)
	sid := openSession(t, ts.URL, "2025-11-25")
	const n = 3 << 20
	call := func(id int) string {
		_, body := send(t, ts.URL, "POST", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"generate","arguments":{"bytes":%d}}}`, id, n), withSession(sid))
		return body
	}
	body := call(1)
	var link struct {
		Result struct {
			Content []struct{ Type, URI, MimeType string }
		}
	}
	data, _, _ := strings.Cut(body[strings.Index(body, "data: {")+len("data: "):], "\n")
	if err := json.Unmarshal([]byte(data), &link); err != nil || len(link.Result.Content) == 0 || link.Result.Content[0].Type != "resource_link" {
		t.Fatalf("a %d-byte stream over a 1 MiB inline limit: %v %.300s", n, err, body)
	}
	uri := link.Result.Content[0].URI
	if !strings.HasPrefix(uri, ts.URL+"/?download=") || len(uri) < len(ts.URL)+len("/?download=")+32 {
		t.Fatalf("link %q: want an http URL on the front with a long token", uri)
	}
	get := func(u string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}
	code, got := get(uri)
	sum := sha256.Sum256(got)
	if code != http.StatusOK || len(got) != n || hex.EncodeToString(sum[:]) != testtools.GenerateSHA256(n) {
		t.Fatalf("download: %d, %d bytes (want %d, the generated ones)", code, len(got), n)
	}
	if code, _ := get(ts.URL + "/?download=" + strings.Repeat("A", 32)); code != http.StatusNotFound {
		t.Fatalf("a guessed token: %d, want 404", code)
	}
	// 3 MiB more passes the session's 5 MiB: that call fails, nothing kept.
	if body := call(2); !strings.Contains(body, `"id":2,"error"`) || !strings.Contains(body, "MaxSessionOffload") {
		t.Fatalf("a stream past MaxSessionOffload: %.300s", body)
	}
	if r, _ := send(t, ts.URL, "DELETE", "", withSession(sid)); r.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", r.StatusCode)
	}
	if code, _ := get(uri); code != http.StatusNotFound {
		t.Fatalf("the download after its session ended: %d, want 404", code)
	}
	front.Close() // returns once every session's core has finished
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("left behind in StreamDir: %s", e.Name())
	}
}
