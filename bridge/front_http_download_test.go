package bridge_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// TestHTTPFrontServesLargeStreams (issues 12, 22): an execution stream past
// the inline limit becomes a resource_link to an http URL on the front
// itself, with an unguessable token; a GET streams it back, byte for byte,
// and a complete download removes it (404 after, its bytes given back to
// MaxSessionOffload); after the session ends a link gets 404 and nothing is
// left on disk. Past MaxSessionOffload the call fails with -32603.
func TestHTTPFrontServesLargeStreams(t *testing.T) {
	t.Parallel()
	const n = 3 << 20
	front, ts, dir, sid, call := offloadFront(t, 0)
	body := call(1)
	var link struct {
		Result struct {
			Content []struct{ Type, URI, Name, MimeType string }
		}
	}
	data, _, _ := strings.Cut(body[strings.Index(body, "data: {")+len("data: "):], "\n")
	if err := json.Unmarshal([]byte(data), &link); err != nil || len(link.Result.Content) == 0 || link.Result.Content[0].Type != "resource_link" {
		t.Fatalf("a %d-byte stream over a 1 MiB inline limit: %v %.300s", n, err, body)
	}
	uri := link.Result.Content[0].URI
	if name := link.Result.Content[0].Name; name != "stream-1.bin" {
		t.Errorf("the link's name %q, want stream-1.bin (from the stream, not the URL)", name)
	}
	req, _ := http.NewRequest("GET", uri, nil)
	req.Header.Set("Range", "bytes=0-0") // a part: the link stays
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if cd := resp.Header.Get("Content-Disposition"); cd != "attachment; filename=stream-1.bin" {
			t.Errorf("Content-Disposition %q, want the link's name as the file name", cd)
		}
	}
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
	if code != http.StatusOK || len(got) != n || hex.EncodeToString(sum[:]) != demotools.GenerateSHA256(n) {
		t.Fatalf("download: %d, %d bytes (want %d, the generated ones)", code, len(got), n)
	}
	if code, _ := get(ts.URL + "/?download=" + strings.Repeat("A", 32)); code != http.StatusNotFound {
		t.Fatalf("a guessed token: %d, want 404", code)
	}
	// A complete download removes the file and gives its bytes back.
	if code, _ := get(uri); code != http.StatusNotFound {
		t.Fatalf("a link downloaded in full, again: %d, want 404", code)
	}
	if body := call(2); !strings.Contains(body, `"id":2,"result"`) || !strings.Contains(body, "resource_link") {
		t.Fatalf("a second 3 MiB stream once the first was downloaded: %.300s", body)
	}
	// 3 MiB more passes the session's 5 MiB while the second is kept: that
	// call fails, nothing kept.
	if body := call(3); !strings.Contains(body, `"id":3,"error"`) || !strings.Contains(body, "MaxSessionOffload") {
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

// TestHTTPFrontDownloadLifetime (issue 22): a link nobody downloads is
// removed after DownloadLifetime, its file gone and its bytes given back to
// MaxSessionOffload, while the session lives on; a partial download (Range)
// does not remove it early.
func TestHTTPFrontDownloadLifetime(t *testing.T) {
	t.Parallel()
	const lifetime = 2 * time.Second // room for the Range GET below on a loaded machine
	_, _, dir, _, call := offloadFront(t, lifetime)
	body := call(1)
	i := strings.Index(body, `"uri":"`)
	if i < 0 {
		t.Fatalf("no link: %.300s", body)
	}
	uri, _, _ := strings.Cut(body[i+len(`"uri":"`):], `"`)
	req, _ := http.NewRequest("GET", uri, nil)
	req.Header.Set("Range", "bytes=0-99")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || len(part) != 100 {
		t.Fatalf("a range of the link: %d, %d bytes", resp.StatusCode, len(part))
	}
	// Its lifetime ends it: the file goes, the link gets 404 (bounded wait
	// for the timer), and the next 3 MiB fit in 5 MiB again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		files := 0
		filepath.WalkDir(dir, func(_ string, d fs.DirEntry, _ error) error {
			if d != nil && !d.IsDir() {
				files++
			}
			return nil
		})
		if files == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d files left 10 s after a %v lifetime", files, lifetime)
		}
		time.Sleep(lifetime / 20)
	}
	resp, err = http.Get(uri)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an expired link: %d, want 404", resp.StatusCode)
	}
	// 3 + 3 MiB pass 5 MiB: this fits only because the expired link gave
	// its bytes back.
	if body := call(2); !strings.Contains(body, `"id":2,"result"`) {
		t.Fatalf("3 MiB after the expired link gave its bytes back: %.300s", body)
	}
}

// offloadFront serves a 2025 session of an HTTP front with a 1 MiB inline
// limit, a 5 MiB MaxSessionOffload, its files in dir and DownloadLifetime
// lifetime (0: the default); call makes a 3 MiB generate with id.
func offloadFront(t *testing.T, lifetime time.Duration) (front *bridge.HTTPFront, ts *httptest.Server, dir, sid string, call func(id int) string) {
	t.Helper()
	srv := flowtest.Serve(t, flow.ServerConfig{Logger: flowtest.Quiet})
	dir = t.TempDir()
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{flowtest.Cert.Hash()}})
	front = bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(), InlineLimit: 1 << 20, StreamDir: dir,
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: flowtest.Quiet}, Logger: flowtest.Quiet},
		MaxSessionOffload: 5 << 20, DownloadLifetime: lifetime})
	ts = httptest.NewServer(front)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { front.Close() })
	sid = openSession(t, ts.URL, "2025-11-25")
	return front, ts, dir, sid, func(id int) string {
		_, body := send(t, ts.URL, "POST", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"generate","arguments":{"bytes":%d}}}`, id, 3<<20), withSession(sid))
		return body
	}
}
