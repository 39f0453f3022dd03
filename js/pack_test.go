package js

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/gobuild"
)

// TestPackedPackageInFreshApp installs the package as a web developer does
// (js/README.md): `npm pack` builds dist/index.js by its prepack script and
// writes the tarball; a fresh project (testapp/) installs it beside
// @modelcontextprotocol/client 2.4.0 from the registry, esbuild bundles
// testapp/app.js from that project's node_modules, and the page, served on
// 127.0.0.1, connects from headless Chromium to a real mcp-flow-server with
// the certificate hash it printed, lists the tools, calls echo and closes.
//
// npm pack runs in a copy of js/ without dist/ (node_modules linked), so
// the tarball holds dist/index.js only if prepack builds it, and the shared
// checkout is left as it was.
func TestPackedPackageInFreshApp(t *testing.T) {
	chromium := browsertest.Chromium(t)
	for _, tool := range []string{"npm", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			browsertest.Need(t, tool+" (Debian package npm)", err)
		}
	}
	// esbuild (prepack's and the app's bundler) and playwright-core
	// (test/run.mjs), at the versions of package-lock.json.
	browsertest.NPMInstall(t, ".", []string{"node_modules/esbuild", "node_modules/playwright-core"}, "install", "--no-audit", "--no-fund", "--ignore-scripts")
	esbuild, err := filepath.Abs("node_modules/.bin/esbuild")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()

	// npm pack, in a copy of the package's folder.
	pkgDir := filepath.Join(tmp, "js")
	copyPackageSource(t, ".", pkgDir)
	modules, _ := filepath.Abs("node_modules")
	if err := os.Symlink(modules, filepath.Join(pkgDir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	packDir := filepath.Join(tmp, "pack")
	if err := os.Mkdir(packDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var packed []struct {
		Filename string
		Size     int64
		Files    []struct{ Path string }
	}
	if err := json.Unmarshal(npmIn(t, pkgDir, "pack", "--json", "--pack-destination", packDir), &packed); err != nil || len(packed) != 1 {
		t.Fatalf("npm pack --json: %v (%d packages)", err, len(packed))
	}
	var files []string
	for _, f := range packed[0].Files {
		files = append(files, f.Path)
	}
	slices.Sort(files)
	if want := []string{"README.md", "dist/index.js", "index.d.ts", "package.json"}; !slices.Equal(files, want) {
		t.Fatalf("the tarball holds %v, want exactly %v (no test page, no node_modules; dist/index.js built by prepack)", files, want)
	}
	tarball := filepath.Join(packDir, packed[0].Filename)
	t.Logf("npm pack: %s, %d bytes", packed[0].Filename, packed[0].Size)

	// A fresh project: testapp's package.json (the SDK v2 client, locked) and
	// the tarball, installed by path as js/README.md says.
	app := filepath.Join(tmp, "app")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json", "app.js", "index.html"} {
		b, err := os.ReadFile(filepath.Join("testapp", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(app, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	npmIn(t, app, "install", "--no-audit", "--no-fund", "--prefer-offline", tarball)
	for _, f := range []string{"node_modules/@mcp-flow/webtransport/dist/index.js", "node_modules/@modelcontextprotocol/client/package.json"} {
		if _, err := os.Stat(filepath.Join(app, f)); err != nil {
			t.Fatalf("after npm install in the fresh project: %v", err)
		}
	}

	// Bundled from the app's own node_modules: the package is the tarball's.
	runIn(t, app, esbuild, "app.js", "--bundle", "--format=esm", "--minify", "--outfile=app.bundle.js", "--metafile=meta.json", "--log-level=warning")
	var meta struct{ Inputs map[string]json.RawMessage }
	if b, err := os.ReadFile(filepath.Join(app, "meta.json")); err != nil || json.Unmarshal(b, &meta) != nil {
		t.Fatalf("esbuild metafile: %v", err)
	}
	if _, ok := meta.Inputs["node_modules/@mcp-flow/webtransport/dist/index.js"]; !ok {
		t.Fatalf("the bundle's inputs do not include the installed package's dist/index.js: %v", slices.Sorted(maps.Keys(meta.Inputs)))
	}
	runIn(t, app, esbuild, "node_modules/@mcp-flow/webtransport/dist/index.js", "--minify", "--outfile=package.min.js", "--log-level=warning")
	t.Logf("minified, then gzipped by Go's compress/gzip at level 9: the package's dist/index.js %s; the app bundle with the SDK v2 client %s",
		gzipSize(t, filepath.Join(app, "package.min.js")), gzipSize(t, filepath.Join(app, "app.bundle.js")))

	// The page, on loopback, against the real mcp-flow-server.
	srvURL, hash := startMCPFlowServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pages := &http.Server{Handler: http.FileServer(http.Dir(app))}
	go pages.Serve(ln)
	t.Cleanup(func() { pages.Close() })
	const text = "packed, installed, bundled"
	pageURL := fmt.Sprintf("http://%s/index.html?url=%s&hash=%s&text=%s", ln.Addr(), url.QueryEscape(srvURL), hash, url.QueryEscape(text))
	var res struct {
		Error           string
		Encoding        string
		ServerTransport struct{ Type string }
		Tools           []string
		Echo            string
		Closed          bool
		Console         []string
	}
	browsertest.Drive(t, ".", "test/run.mjs", chromium, pageURL, 60*time.Second, &res)
	if res.Error != "" {
		t.Fatalf("the app failed: %s\nconsole:\n%s", res.Error, strings.Join(res.Console, "\n"))
	}
	if res.Encoding != "cbor" || res.ServerTransport.Type != "mcp-flow" {
		t.Errorf("encoding %q, server transport %+v; want cbor over mcp-flow", res.Encoding, res.ServerTransport)
	}
	if !slices.Contains(res.Tools, "echo") || !slices.Contains(res.Tools, "generate") {
		t.Errorf("tools/list gave %v; want mcp-flow-server's test tools", res.Tools)
	}
	if res.Echo != text {
		t.Errorf("echo gave %q, want %q", res.Echo, text)
	}
	if !res.Closed {
		t.Errorf("onclose not called after client.close()")
	}
}

// copyPackageSource copies the package's folder src to dst, leaving out what
// is built or installed (dist/, node_modules/, tarballs) and the fresh
// project of the test.
func copyPackageSource(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		switch {
		case d.IsDir() && slices.Contains([]string{"dist", "node_modules", "testapp"}, rel):
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case !d.Type().IsRegular() || strings.HasSuffix(rel, ".tgz"):
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// npmOffline matches npm's errors for a registry it cannot reach or a
// package missing from an offline cache: a missing peer (browsertest.Need),
// not a fault of the package.
var npmOffline = regexp.MustCompile(`ENOTCACHED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNREFUSED|ECONNRESET|ENETUNREACH`)

// npmIn runs npm with args in dir and returns its stdout; a failure is the
// test's, unless the registry is out of reach.
func npmIn(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("npm", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		what := "npm " + strings.Join(args, " ")
		if npmOffline.Match(stderr.Bytes()) {
			browsertest.Need(t, what+" (the npm registry)", fmt.Errorf("%v\n%s", err, stderr.String()))
		}
		t.Fatalf("%s in %s: %v\nstdout:\n%s\nstderr:\n%s", what, dir, err, out, stderr.String())
	}
	return out
}

// runIn runs a command in dir; a failure is the test's.
func runIn(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// gzipSize is the size of the file at p gzipped at level 9, as "N bytes".
func gzipSize(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return fmt.Sprintf("%d bytes (%d minified)", z.Len(), len(b))
}

// startMCPFlowServer builds and runs mcp-flow-server (its test tools) on a free
// loopback port and returns the URL and certificate hash it prints; it is
// stopped with SIGTERM, and waited for, at the end of the test.
func startMCPFlowServer(t *testing.T) (srvURL, hash string) {
	t.Helper()
	return flowtest.ServerProcess(t, gobuild.For(t, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server"))
}
