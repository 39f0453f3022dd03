package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/quic-go/webtransport-go"
)

// browserRounds is how many interleaved pairs of reads the page takes
// (after one warm-up read of each, not counted).
const browserRounds = 9

// BenchmarkBrowserThroughput: a browser's throughput against its own limit
// (issue 29). A page (js/test/throughput.js) in headless Chromium and in
// Firefox ESR reads the same n bytes (64 MiB in full mode, 32 MiB in short
// mode), in browserRounds interleaved pairs, from a bare WebTransport
// stream of a webtransport-go server (bareWTServer: a unidirectional stream
// of the server's, as an execution stream is) and as the result of
// tools/call generate through the official TypeScript SDK (v2) client over
// the npm package's WebTransportClientTransport with its defaults (CBOR on
// the control stream, the bytes raw on an execution stream, docs/spec.md
// §5), timing each read in the page. It reports the medians of the rounds'
// bare-MB/s and sdk-MB/s, and the median of the pairs' ratios, sdk/bare.
// Under CI=true a missing engine fails the benchmark; elsewhere it is
// skipped, saying what is missing (browsertest.Need).
func BenchmarkBrowserThroughput(b *testing.B) {
	n := int64(32 << 20)
	if full {
		n = 64 << 20
	}
	jsDir, err := filepath.Abs("../js")
	if err != nil {
		b.Fatal(err)
	}
	browsertest.NPM(b, jsDir, "node_modules/@modelcontextprotocol/client")
	// The page's bundle, built from js/test/throughput.js into a folder of
	// the benchmark's own, served with a page that loads it.
	pages := b.TempDir()
	browsertest.Run(b, jsDir, "node_modules/.bin/esbuild", "test/throughput.js", "--bundle", "--format=esm", "--platform=browser", "--log-level=warning",
		"--outfile="+filepath.Join(pages, "throughput.js"))
	index := `<!doctype html><meta charset="utf-8"><title>MCP-Flow browser throughput</title><script type="module" src="/throughput.js"></script>`
	if err := os.WriteFile(filepath.Join(pages, "index.html"), []byte(index), 0o644); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: http.FileServer(http.Dir(pages))}
	go hs.Serve(ln)
	defer hs.Close()

	// No AllowedOrigins: a page on loopback may use a loopback server (spec §9).
	srv := flowtest.Serve(b, flow.ServerConfig{Logger: quiet})
	bare := bareWTServer(b)
	pageURL := fmt.Sprintf("http://%s/index.html?url=%s&bare=%s&hash=%s&size=%d&rounds=%d",
		ln.Addr(), url.QueryEscape(srv.URL()), url.QueryEscape(bare), flowtest.Cert.HashHex(), n, browserRounds)
	timeout := 60*time.Second + time.Duration(n>>20)*2*time.Second

	engines := []struct {
		name string
		// driver finds (or installs) the engine and returns how to run the page.
		driver func(b *testing.B) func(v any)
	}{
		{"chromium", func(b *testing.B) func(v any) {
			chromium := browsertest.Chromium(b)
			return func(v any) { browsertest.Drive(b, jsDir, "test/run.mjs", chromium, pageURL, timeout, v) }
		}},
		{"firefox", func(b *testing.B) func(v any) {
			firefox := browsertest.Firefox(b)
			browsertest.NPM(b, jsDir, "node_modules/puppeteer-core")
			return func(v any) { browsertest.DriveFirefox(b, jsDir, "test/firefox.mjs", firefox, pageURL, timeout, v) }
		}},
	}
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			drive := e.driver(b)
			for b.Loop() {
				type read struct {
					Ms, CallMs, FirstMs float64
					Bytes               int64
					Chunks              int
				}
				var res struct {
					Error, Encoding string
					ServerTransport flow.ServerTransport
					Bare, SDK       []read
					Console         []string
					UserAgent       string
				}
				drive(&res)
				if res.Error != "" {
					b.Fatalf("the page failed: %s\nconsole:\n%v", res.Error, res.Console)
				}
				if len(res.Bare) != browserRounds || len(res.SDK) != browserRounds {
					b.Fatalf("%d bare and %d SDK reads, want %d of each", len(res.Bare), len(res.SDK), browserRounds)
				}
				var bareRates, sdkRates, ratios []float64
				var bareChunks, sdkChunks, callMs, firstMs []float64
				for i := range browserRounds {
					x, s := res.Bare[i], res.SDK[i]
					if x.Bytes != n || s.Bytes != n {
						b.Fatalf("round %d: read %d bytes bare and %d through the SDK, want %d", i, x.Bytes, s.Bytes, n)
					}
					xr, sr := float64(n)/x.Ms/1e3, float64(n)/s.Ms/1e3
					bareRates, sdkRates, ratios = append(bareRates, xr), append(sdkRates, sr), append(ratios, sr/xr)
					bareChunks, sdkChunks = append(bareChunks, float64(x.Chunks)), append(sdkChunks, float64(s.Chunks))
					callMs, firstMs = append(callMs, s.CallMs), append(firstMs, x.FirstMs)
				}
				b.Logf("%s: encoding %s; bare MB/s %.0f, SDK MB/s %.0f, sdk/bare %.2f; bare stream's arrival ms %.0f, SDK result's ms %.0f", res.UserAgent, res.Encoding, bareRates, sdkRates, ratios, firstMs, callMs)
				if res.Encoding != "cbor" {
					b.Errorf("the transport's defaults negotiated %q, want cbor", res.Encoding)
				}
				b.ReportMetric(median(bareRates), "bare-MB/s")
				b.ReportMetric(median(sdkRates), "sdk-MB/s")
				b.ReportMetric(median(ratios), "sdk/bare")
				b.ReportMetric(float64(n)/median(bareChunks), "bare-B/chunk")
				b.ReportMetric(float64(n)/median(sdkChunks), "sdk-B/chunk")
				b.ReportMetric(browserRounds, "rounds")
			}
		})
	}
}

// bareWTServer serves bare WebTransport streams to a browser on
// 127.0.0.1 with flowtest.Cert (whose hash the page pins): for each
// bidirectional stream the page opens with 8 bytes (n, big-endian), n
// bytes of demotools.Generate on a unidirectional stream of the server's,
// written 256 KiB at a time (as the execution stream writes). It returns
// the session's URL; the server closes with the benchmark.
func bareWTServer(b *testing.B) string {
	url, stop := wtServe(b, certs.ServerTLSConfig(flowtest.Cert), "/bare", func(ctx context.Context, s *webtransport.Session, st *webtransport.Stream) {
		defer st.Close()
		var req [8]byte
		if _, err := io.ReadFull(st, req[:]); err != nil {
			return
		}
		u, err := s.OpenUniStreamSync(ctx)
		if err != nil {
			return
		}
		buf := make([]byte, 256<<10)
		src := demotools.Generate(int64(binary.BigEndian.Uint64(req[:])))
		if _, err := io.CopyBuffer(struct{ io.Writer }{u}, struct{ io.Reader }{src}, buf); err != nil {
			u.CancelWrite(1)
			return
		}
		u.Close()
	})
	b.Cleanup(stop)
	return url
}
