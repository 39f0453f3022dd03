package js

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/conformance"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// denoSDKKnown are the conformance checks a TypeScript SDK server on Deno
// 2.9.6 fails, each for a limit of Deno's WebTransport server
// (docs/INTEROP.md, "Deno as a server"; js/src/server.js): a failed stream
// cannot be reset (it is left unfinished after $/streamError), and the
// script sees no CONNECT before Deno accepts it (no Origin check).
var denoSDKKnown = map[string]bool{"stream.error-reset": true, "origin": true, "origin.403": true}

// denoSDKSkips are the checks that do not apply to it: it speaks json and
// cbor, not protobuf; it supports datagrams (the guide's -32004 is for a
// server that does not).
var denoSDKSkips = map[string]bool{"negotiate.protobuf": true, "datagram.unsupported": true}

// TestDenoSDKServer serves an MCP server of the official TypeScript SDK v2
// (@modelcontextprotocol/server's McpServer) over MCP-Flow from Deno, with
// the server transport of src/server.js (test/deno-sdk-server.mjs: the
// example's tools, examples/deno-server.mjs, and those of the runner's
// checks), and judges it with our own peers, against one Deno process:
// the mcp-flow CLI, which dials draft-02 on its own (Deno's quinn lacks
// RESET_STREAM_AT), calls echo and a 64 MiB generate whose bytes must be
// spec §5.5's exactly; and the conformance runner in server mode, every
// check passing but the known ones (denoSDKKnown, which must still fail:
// Deno changed if not).
func TestDenoSDKServer(t *testing.T) {
	deno := browsertest.Deno(t)
	browsertest.NPMInstall(t, ".", []string{"node_modules/@modelcontextprotocol/server", "node_modules/zod", "node_modules/cbor-x"},
		"install", "--no-audit", "--no-fund", "--ignore-scripts")
	srv := startDenoServer(t, deno, "test/deno-sdk-server.mjs")
	url := srv.url + "/mcp-flow"
	hash := flowtest.Cert.HashHex()

	t.Run("cli", func(t *testing.T) {
		t.Parallel()
		cli := filepath.Join(t.TempDir(), "mcp-flow")
		if out, err := exec.Command("go", "build", "-o", cli, "github.com/mcp-flow/mcp-flow/cmd/mcp-flow").CombinedOutput(); err != nil {
			t.Fatalf("go build mcp-flow: %v\n%s", err, out)
		}
		run := func(args ...string) (stdout []byte, stderr string, err error) {
			// A hang guard: the 64 MiB call took 2.4 s on this machine.
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var e bytes.Buffer
			cmd := exec.CommandContext(ctx, cli, append([]string{"-url", url, "-cert-hash", hash}, args...)...)
			cmd.Stderr = &e
			stdout, err = cmd.Output()
			return stdout, e.String(), err
		}
		out, stderr, err := run("-debug", "call", "echo", "text=hello deno")
		if err != nil || string(out) != "hello deno\n" {
			t.Fatalf("call echo: %v: stdout %q\nstderr:\n%s", err, out, stderr)
		}
		if !strings.Contains(stderr, "dialing again in that dialect") {
			t.Errorf("the CLI did not say it fell back to draft-02; stderr:\n%s", stderr)
		}
		// A stream that fails after 50,000 bytes: Deno cannot reset it, so
		// the server sends $/streamError and leaves it open; the CLI must
		// exit 4 (a failed stream, spec §5.4) at once, not hang or exit 0.
		out, stderr, err = run("call", "fail_midstream", "bytes=50000")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 4 || !strings.Contains(stderr, "failing on purpose") {
			t.Errorf("call fail_midstream: %v (want exit status 4 naming the failure), %d bytes on stdout\nstderr:\n%s", err, len(out), stderr)
		}
		// The example's generate returns one 64 MiB blob, which the
		// transport moves to an execution stream (past 256 KiB).
		const n = 64 << 20
		out, stderr, err = run("call", "generate_blob", "bytes=67108864")
		want := sha256.New()
		io.Copy(want, demotools.Generate(n))
		if got := sha256.Sum256(out); err != nil || len(out) != n || !bytes.Equal(got[:], want.Sum(nil)) {
			t.Fatalf("call generate_blob bytes=%d: %v: %d bytes, sha256 %s, want %s\nstderr:\n%s", n, err, len(out), hex.EncodeToString(got[:]), hex.EncodeToString(want.Sum(nil)), stderr)
		}
	})

	t.Run("vectors", func(t *testing.T) {
		t.Parallel()
		vectors, err := filepath.Abs("../testdata/vectors")
		if err != nil {
			t.Fatal(err)
		}
		here, _ := filepath.Abs(".")
		var r struct {
			Checked, NotApplicable map[string]int
			Accepted, Failures     []string
		}
		// A hang guard: the script takes 0.2 s.
		browsertest.DriveDeno(t, ".", deno, []string{"--allow-read=" + here + "," + vectors}, "test/vectors.mjs", 30*time.Second, &r)
		t.Logf("checked %v; not applicable %v; malformed payloads the decoders take: %v", r.Checked, r.NotApplicable, r.Accepted)
		for _, f := range r.Failures {
			t.Error(f)
		}
		for _, k := range []string{"frames", "stream headers", "datagrams", "messages"} {
			if r.Checked[k] == 0 {
				t.Errorf("no %s vector checked", k)
			}
		}
	})

	t.Run("conformance", func(t *testing.T) {
		t.Parallel()
		// The check timeout bounds stream.error's wait for the end of a
		// stream Deno leaves unfinished (the rest take 0.1 s each, 0.5 s
		// shutdown.drain): 2 s, not 10, keeps the run short.
		rs := conformance.RunServer(context.Background(), conformance.Target{URL: url, TLS: flowtest.PinnedTLS(t, hash)},
			conformance.ServerChecks(), conformance.Options{CheckTimeout: 2 * time.Second, Expected: denoSDKKnown})
		for _, r := range rs {
			switch {
			case r.Status == conformance.Skip && denoSDKSkips[r.ID]:
			case r.ID == "stream.error-reset" && r.Status == conformance.XFail && !strings.Contains(r.Seen, "ended with deadline exceeded"):
				// Left unfinished, never finished: a FIN would make the
				// truncated payload look complete (a FIN comes when the
				// transport lets go of the stream's writer, ExecStream.fail).
				t.Errorf("%s: the failed stream was not left open: %s", r.ID, r.Seen)
			case r.Status == conformance.XFail:
			case r.Status == conformance.Pass && !denoSDKKnown[r.ID]:
			default:
				t.Errorf("%s: %s: %s", r.ID, r.Status, r.Seen)
			}
		}
		c := conformance.Counts(rs)
		t.Logf("%d passed, %d failed as known, %d skipped", c[conformance.Pass], c[conformance.XFail], c[conformance.Skip])
	})
}
