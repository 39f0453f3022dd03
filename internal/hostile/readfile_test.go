package hostile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// callReadFile sends one read_file call per path (ids 1…), pipelined, and
// returns the replies by id.
func (e *env) callReadFile(p *Peer, paths []string) map[int]Reply {
	e.t.Helper()
	var reqs [][]byte
	for i, path := range paths {
		args, _ := json.Marshal(map[string]string{"path": path})
		reqs = append(reqs, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read_file","arguments":%s}}`, i+1, args))
	}
	if err := p.Write(frames(reqs...)); err != nil {
		e.t.Fatal(err)
	}
	got := map[int]Reply{}
	for len(got) < len(paths) {
		r, err := p.ReadReply(e.ctx)
		if err != nil {
			e.t.Fatalf("read_file: after %d replies: %v; server stderr:\n%s", len(got), err, e.srv.Stderr)
		}
		if r.Method != "" {
			continue
		}
		var id int
		if _, err := fmt.Sscan(r.ID, &id); err != nil || id < 1 || id > len(paths) {
			e.t.Fatalf("read_file: a reply with id %s", r.ID)
		}
		got[id] = r
	}
	return got
}

// refused reports whether r refuses a read_file call: a tool error
// (isError) or a JSON-RPC error, and no execution stream.
func refused(r Reply) bool {
	if r.Code != 0 {
		return true
	}
	var res struct{ IsError bool }
	return json.Unmarshal(r.Result, &res) == nil && res.IsError && !strings.Contains(string(r.Result), "ref/stream")
}

// TestReadFileEscapes: no path leaves read_file's root: .., absolute paths,
// a symlink to a file outside, a symlink to a directory outside (spec §9).
// The secret's bytes never appear in a reply; a file inside is served.
func TestReadFileEscapes(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("SECRET-BYTES"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "ok.txt"), []byte("fine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "link-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "dir-out")); err != nil {
		t.Fatal(err)
	}
	up, err := filepath.Rel(root, secret)
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, "-root", root)
	paths := []string{up, secret, "link-out", "dir-out/secret.txt", "ok.txt/../" + up, "./../" + filepath.Base(outside) + "/secret.txt",
		"/etc/passwd", "../../../../../../../../etc/passwd", "ok.txt\x00/../../etc/passwd", "ok.txt"}
	var got map[int]Reply
	e.during(func() { got = e.callReadFile(e.initPeer(), paths) })
	for i, path := range paths {
		r := got[i+1]
		if strings.Contains(string(r.Result), "SECRET") || strings.Contains(r.Message, "SECRET") || strings.Contains(string(r.Result), "root:") {
			t.Errorf("read_file %q leaked: %s %s", path, r.Result, r.Message)
		}
		if path == "ok.txt" {
			if refused(r) {
				t.Errorf("read_file %q inside the root was refused: %s %s", path, r.Result, r.Message)
			}
			continue
		}
		if !refused(r) {
			t.Errorf("read_file %q was not refused: %s", path, r.Result)
		}
	}
	e.report()
	e.alive()
}

// TestReadFileFIFOAndDevices: 200 read_file calls of a FIFO under the root
// are each refused at once, and the server's thread count stays flat (the
// issue: one OS thread per call, 1,000 calls reached Go's 10,000-thread
// limit and crashed the server). With -root /dev, devices (urandom, zero,
// null) are refused instead of streamed without end.
func TestReadFileFIFOAndDevices(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := setup(t, "-root", root)
	paths := make([]string, 200)
	for i := range paths {
		paths[i] = "pipe"
	}
	var got map[int]Reply
	e.during(func() { got = e.callReadFile(e.initPeer(), paths) })
	for id, r := range got {
		if !refused(r) {
			t.Fatalf("read_file of a FIFO (call %d) was not refused: %s", id, r.Result)
		}
	}
	m, _ := e.report()
	if m.Threads > e.base.Threads+16 {
		t.Errorf("200 read_file calls of a FIFO left the server with %d threads, %d before", m.Threads, e.base.Threads)
	}
	e.alive()

	dev := setup(t, "-root", "/dev")
	devices := []string{"urandom", "zero", "null", "random", "full"}
	var gotDev map[int]Reply
	dev.during(func() { gotDev = dev.callReadFile(dev.initPeer(), devices) })
	for i, d := range devices {
		if r := gotDev[i+1]; !refused(r) {
			t.Errorf("read_file /dev/%s was not refused: %s", d, r.Result)
		}
	}
	dev.report()
	dev.alive()
}
