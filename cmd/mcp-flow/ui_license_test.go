package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// bundledPackage matches the path comment esbuild writes above each input
// of the bundle that comes from an npm package.
var bundledPackage = regexp.MustCompile(`(?m)^// node_modules/((?:@[^/\s]+/)?[^/\s]+)/`)

// TestBundleCarriesLicenses: the inspector's ui/mcpflow.js (the npm package's
// dist/index.js, built by js/build.mjs) ends with the license text of every
// npm package bundled in it, cbor-x among them, in one comment that names
// each package; where js/node_modules is installed, each text is that
// package's LICENSE file word for word.
func TestBundleCarriesLicenses(t *testing.T) {
	t.Parallel()
	b, err := uiFiles.ReadFile("ui/mcpflow.js")
	if err != nil {
		t.Fatal(err)
	}
	bundle := string(b)
	seen := map[string]bool{}
	for _, m := range bundledPackage.FindAllStringSubmatch(bundle, -1) {
		seen[m[1]] = true
	}
	if !seen["cbor-x"] {
		t.Fatalf("ui/mcpflow.js has no input from node_modules/cbor-x: is it still esbuild's bundle with path comments?")
	}
	_, legal, ok := strings.Cut(bundle, "\n/*! Third-party code in this bundle, and its licenses:\n")
	if !ok {
		t.Fatalf("ui/mcpflow.js ends with no third-party license comment (js/build.mjs writes it; run `make ui`)")
	}
	legal, _, _ = strings.Cut(legal, "\n */")
	text := uncomment(legal)
	for pkg := range seen {
		head := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pkg) + ` \S+ \([^)]*\):$`).FindStringIndex(text)
		if head == nil {
			t.Errorf("the license comment of ui/mcpflow.js names no %s, which the bundle holds", pkg)
			continue
		}
		section := text[head[1]:]
		if next := regexp.MustCompile(`(?m)^\S+ \S+ \([^)]*\):$`).FindStringIndex(section); next != nil {
			section = section[:next[0]]
		}
		if !strings.Contains(strings.ToLower(section), "copyright") {
			t.Errorf("the license comment of ui/mcpflow.js has no license text for %s:\n%s", pkg, section)
			continue
		}
		var license []byte
		for _, name := range []string{"LICENSE", "LICENSE.md", "LICENSE.txt", "license", "LICENCE"} {
			if license, err = os.ReadFile(filepath.Join("../../js/node_modules", pkg, name)); err == nil {
				break
			}
		}
		if license == nil {
			t.Logf("js/node_modules/%s is not installed: its license text is not compared", pkg)
			continue
		}
		if got, want := strings.Join(strings.Fields(section), " "), strings.Join(strings.Fields(strings.ReplaceAll(string(license), "*/", "* /")), " "); got != want {
			t.Errorf("the license text of %s in ui/mcpflow.js is not js/node_modules/%s's (run `make ui`):\n got %q\nwant %q", pkg, pkg, got, want)
		}
	}
}

// uncomment drops the " * " that starts each line of a block comment.
func uncomment(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		line = strings.TrimPrefix(line, " *")
		b.WriteString(strings.TrimPrefix(line, " "))
	}
	return b.String()
}
