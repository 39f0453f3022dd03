// Package vectortest keeps the test vectors of testdata/vectors (docs/conformance.md,
// "Test vectors") in step with the implementation: each file is what the
// implementation writes now, rewritten with -update.
package vectortest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Marshal is the vectors' JSON form of v: indented by one space, HTML
// characters as they are, a final newline.
func Marshal(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Load returns the vector file at path. With update it first writes v
// there (Marshal). Without, the test fails, naming regen (the command that
// rewrites it) and the first byte that differs, when the file is not what
// v gives now.
func Load(t testing.TB, path string, v any, update bool, regen string) []byte {
	t.Helper()
	out := Marshal(t, v)
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", path, len(out))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with %s)", err, regen)
	}
	if !bytes.Equal(b, out) {
		t.Errorf("%s is stale: it differs from what this implementation writes now at byte %d (regenerate with %s)", path, firstDiff(b, out), regen)
	}
	return b
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
