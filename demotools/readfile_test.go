package demotools_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// fileServer serves read_file for root, with a file size limit, over a real
// session on 127.0.0.1.
func fileServer(t *testing.T, root string, limit int64) *flow.Session {
	t.Helper()
	mux, caps := flowtest.ToolsMux(t, demotools.Config{Root: root, MaxFileSize: limit})
	srv := flowtest.Serve(t, flow.ServerConfig{Handler: mux, Capabilities: caps, Info: flow.Implementation{Name: "files", Version: "1"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := flow.Dial(ctx, srv.URL(), flow.ClientConfig{TLSConfig: flowtest.ClientTLS(t), Info: flow.Implementation{Name: "c", Version: "1"}, Logger: flowtest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// readFile calls read_file and returns the file's bytes, or the tool
// error's text.
func readFile(t *testing.T, s *flow.Session, path string) (data []byte, toolErr string) {
	t.Helper()
	data, toolErr, err := callReadFile(s, path)
	if err != nil {
		t.Fatalf("read_file %s: %v", path, err)
	}
	return data, toolErr
}

// callReadFile is readFile for any goroutine: a failed call is err.
func callReadFile(s *flow.Session, path string) (data []byte, toolErr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := s.Call(ctx, "tools/call", map[string]any{"name": "read_file", "arguments": map[string]string{"path": path}})
	if err != nil {
		return nil, "", err
	}
	var res struct {
		IsError bool
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return nil, "", err
	}
	if res.IsError {
		if len(r.Refs) != 0 || len(res.Content) != 1 {
			return nil, "", fmt.Errorf("an error with a stream: %s", r.Result)
		}
		return nil, res.Content[0].Text, nil
	}
	sr, err := r.Stream(ctx, r.Refs[0].StreamTag)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(sr)
	return b, "", err
}

// threads returns the OS threads of this process (/proc/self/status).
func threads(t *testing.T) int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// TestReadFileServesRegularFilesOnly: read_file serves regular files under
// its root, symlinks inside the root included, up to its size limit; it
// refuses at once a FIFO, a directory, a file over the limit, and any
// symlink out of the root, such as one to /dev/zero (spec §9).
func TestReadFileServesRegularFilesOnly(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	content := []byte("line one\nline two — 二行目\n")
	must(os.WriteFile(filepath.Join(root, "a.txt"), content, 0o644))
	must(os.WriteFile(filepath.Join(root, "exact.bin"), bytes.Repeat([]byte{1}, 100), 0o644))
	must(os.WriteFile(filepath.Join(root, "big.bin"), bytes.Repeat([]byte{1}, 101), 0o644))
	must(os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("no"), 0o644))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))
	must(os.Mkdir(filepath.Join(root, "dir"), 0o755))
	must(os.Symlink("a.txt", filepath.Join(root, "link.txt")))
	must(os.Symlink("dir/../a.txt", filepath.Join(root, "link2.txt")))
	must(os.Symlink("fifo", filepath.Join(root, "fifolink")))
	must(os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "abs-escape")))
	must(os.Symlink(filepath.Join("..", filepath.Base(outside), "secret.txt"), filepath.Join(root, "rel-escape")))
	must(os.Symlink("/dev/zero", filepath.Join(root, "zero")))

	s := fileServer(t, root, 100)
	for _, p := range []string{"a.txt", "link.txt", "link2.txt"} {
		if got, e := readFile(t, s, p); e != "" || !bytes.Equal(got, content) {
			t.Fatalf("%s: %q, error %q", p, got, e)
		}
	}
	if got, e := readFile(t, s, "exact.bin"); e != "" || len(got) != 100 {
		t.Fatalf("a file at the limit: %d bytes, error %q", len(got), e)
	}
	for path, says := range map[string]string{
		"big.bin":    "101 bytes, over the limit of 100",
		"fifo":       "not a regular file but a named pipe",
		"fifolink":   "not a regular file but a named pipe",
		"dir":        "not a regular file but a directory",
		"abs-escape": "escapes",
		"rel-escape": "escapes",
		"zero":       "escapes",
		"../" + filepath.Base(outside) + "/secret.txt": "escapes",
		"/etc/passwd": "escapes",
	} {
		if got, e := readFile(t, s, path); !strings.Contains(e, says) {
			t.Errorf("%s: got %d bytes, error %q; want an error saying %q", path, len(got), e, says)
		}
	}

	// A device inside the root (mcp-flow-server -root /dev) is refused too,
	// rather than streamed without end.
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Fatalf("this test needs /dev/zero: %v", err)
	}
	dev := fileServer(t, "/dev", 0)
	if got, e := readFile(t, dev, "zero"); !strings.Contains(e, "not a regular file but a device") {
		t.Errorf("/dev/zero: got %d bytes, error %q", len(got), e)
	}
}

// TestReadFileFIFODoesNotHoldThreads: 1,000 calls of read_file on a FIFO
// with no writer each fail at once and leave no OS thread behind. Before,
// each call blocked a thread in open(2) until a writer came; 1,000 calls
// took the server to the runtime's 10,000-thread limit and a fatal error.
func TestReadFileFIFODoesNotHoldThreads(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := fileServer(t, root, 0)
	readFile(t, s, "fifo") // the first call starts what the session needs
	before := threads(t)
	const workers, calls = 4, 250
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range calls {
				if _, e, err := callReadFile(s, "fifo"); err != nil || !strings.Contains(e, "named pipe") {
					errs <- fmt.Errorf("a FIFO: error %q, call %v; want a refusal", e, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%v (%d OS threads, %d before)", err, threads(t), before)
	}
	// A few threads may come and go with the scheduler; one per call may not.
	if after := threads(t); after > before+workers+4 {
		t.Fatalf("%d OS threads after %d calls on a FIFO, %d before", after, workers*calls, before)
	} else {
		t.Logf("%d calls on a FIFO: %d OS threads before, %d after", workers*calls, before, after)
	}
}
