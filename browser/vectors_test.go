package browser

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/browsertest"
)

// vectorsDir holds the language-neutral test vectors (docs/conformance.md,
// "Test vectors"), which codec/TestVectors and wire/TestVectors generate and
// check against the Go implementation.
const vectorsDir = "../testdata/vectors"

// TestVectors holds the browser peer's codecs (src/codec.js: the platform's
// JSON, cbor-x, protobufjs over codec/pb/value.proto) and byte layouts
// (src/wire.js), the code its client encodes, frames and parses with, to the
// same vectors as the Go implementation, under Node: every message's bytes
// in json, cbor and protobuf and every accepted form decode to the vector's
// value; the peer's own encodings decode to it with the peer and with the Go
// decoder (checkPeerEncodings), byte for byte the vector's where the value
// model spells its numbers alike; every refused payload is refused with its
// code but for the documented LENIENT ones; frames, stream headers and
// datagram headers exactly, both ways. A wrong vector fails both
// implementations' tests.
func TestVectors(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		browsertest.Need(t, "node (Debian package nodejs)", err)
	}
	browsertest.NPM(t, ".", "node_modules/protobufjs")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	peerOut := filepath.Join(t.TempDir(), "peer-encodings.json")
	cmd := exec.CommandContext(ctx, node, "check_vectors.mjs", vectorsDir, peerOut)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node check_vectors.mjs: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var res struct {
		Checked         map[string]int
		Failures        []string
		Exact           map[string][2]int
		Lenient, Losses []string
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("check_vectors.mjs output: %v\n%s", err, out)
	}
	for _, f := range res.Failures {
		t.Error(f)
	}
	// Every vector of the files was checked: none skipped or lost.
	want := countVectors(t)
	for k, n := range want {
		if res.Checked[k] != n {
			t.Errorf("the browser peer checked %d %s; the files hold %d", res.Checked[k], k, n)
		}
	}
	t.Logf("browser peer checked %v against %s", res.Checked, vectorsDir)
	t.Logf("the peer's encodings byte for byte the vectors' (exact, of all): %v", res.Exact)
	t.Logf("refused payloads the peer takes (docs/conformance.md, Test vectors): %q", res.Lenient)
	t.Logf("values the peer's encoder does not keep: %q", res.Losses)
	checkPeerEncodings(t, peerOut)
}

// countVectors counts the vectors of each kind in the files.
func countVectors(t *testing.T) map[string]int {
	var m struct {
		Messages []struct {
			Accept []json.RawMessage
		}
		Generated, Malformed, Mismatch []json.RawMessage
	}
	var f struct{ Streams []json.RawMessage }
	var s struct{ Headers []json.RawMessage }
	var d struct{ Datagrams []json.RawMessage }
	for name, v := range map[string]any{"messages.json": &m, "frames.json": &f, "streams.json": &s, "datagrams.json": &d} {
		b, err := os.ReadFile(filepath.Join(vectorsDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	forms := 0
	for _, x := range m.Messages {
		forms += len(x.Accept)
	}
	out := map[string]int{"messages": len(m.Messages), "forms": forms, "generated": len(m.Generated),
		"refused": len(m.Malformed) + len(m.Mismatch), "frames": len(f.Streams), "streams": len(s.Headers), "datagrams": len(d.Datagrams)}
	for k, n := range out {
		if n == 0 {
			t.Errorf("the vector files hold no %s", k)
		}
	}
	return out
}
