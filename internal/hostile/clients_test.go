package hostile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/demotools"
)

// client2026 is a 2026-07-28 client of an HTTP front that dials from its
// own loopback address: the front tells its clients apart by address
// (spec §11.6), and 127.0.0.0/8 gives each test client one of its own.
type client2026 struct {
	t    *testing.T
	url  string
	from string
	http *http.Client
}

func newClient2026(t *testing.T, url, from string) *client2026 {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 400, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &client2026{t: t, url: url, from: from, http: &http.Client{Transport: tr}}
}

// request2026 is the body and headers of a 2026-07-28 request.
func request2026(id int, method, name string, params string) ([]byte, http.Header) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	if params == "" {
		params = "{" + meta + "}"
	} else {
		params = strings.TrimSuffix(params, "}") + "," + meta + "}"
	}
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}}
	if name != "" {
		hdr.Set("Mcp-Name", name)
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params), hdr
}

// bigCall is a tools/call of tool with the arguments args (JSON members)
// and key holding big, as the parts of its body around big (so that many
// calls share one big buffer).
func bigCall(id int, tool, args, key string, big []byte) (prefix, suffix []byte, hdr http.Header) {
	body, hdr := request2026(id, "tools/call", tool, fmt.Sprintf(`{"name":%q,"arguments":{%s%q:"@"}}`, tool, args, key))
	prefix, suffix, _ = bytes.Cut(body, []byte("@"))
	return prefix, suffix, hdr
}

// call posts one request and returns the status and the last JSON-RPC
// message of the answer (the response, after any progress).
func (c *client2026) call(ctx context.Context, id int, method, name, params string, extra http.Header) (int, string, error) {
	body, hdr := request2026(id, method, name, params)
	return c.post(ctx, bytes.NewReader(body), int64(len(body)), hdr, extra)
}

// post posts a body of n bytes with hdr and extra.
func (c *client2026) post(ctx context.Context, body io.Reader, n int64, hdr, extra http.Header) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", c.url, body)
	if err != nil {
		return 0, "", err
	}
	req.ContentLength = n
	req.Header = hdr
	for k, v := range extra {
		req.Header[k] = v
	}
	if h := extra.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", err
	}
	s := string(b)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		s = strings.TrimPrefix(lines[len(lines)-1], "data: ")
	}
	return resp.StatusCode, s, nil
}

// echo checks that an echo goes through.
func (c *client2026) echo(ctx context.Context, id int) {
	c.t.Helper()
	code, body, err := c.call(ctx, id, "tools/call", "echo", `{"name":"echo","arguments":{"text":"still here"}}`, nil)
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"result"`) || !strings.Contains(body, "still here") {
		c.t.Errorf("%s: echo: %d %v %.300s", c.from, code, err, body)
	}
}

// download makes a generate result of n bytes past the inline limit and
// downloads its link: the link must name the front's own address, and the
// bytes must be the generated ones.
func (c *client2026) download(ctx context.Context, id, n int, front string) {
	c.t.Helper()
	code, body, err := c.call(ctx, id, "tools/call", "generate", fmt.Sprintf(`{"name":"generate","arguments":{"bytes":%d}}`, n), nil)
	var res struct {
		Result struct{ Content []struct{ Type, URI string } }
	}
	if err != nil || code != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil || len(res.Result.Content) == 0 || res.Result.Content[0].Type != "resource_link" {
		c.t.Errorf("%s: generate %d: %d %v %.300s", c.from, n, code, err, body)
		return
	}
	uri := res.Result.Content[0].URI
	if !strings.HasPrefix(uri, front+"?download=") {
		c.t.Errorf("%s: the link %q does not name the front's own endpoint %s", c.from, uri, front)
		return
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", uri, nil)
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Errorf("%s: download: %v", c.from, err)
		return
	}
	defer resp.Body.Close()
	h := sha256.New()
	got, err := io.Copy(h, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || got != int64(n) || hex.EncodeToString(h.Sum(nil)) != demotools.GenerateSHA256(int64(n)) {
		c.t.Errorf("%s: download: %d, %d bytes %v (want %d, the generated ones)", c.from, resp.StatusCode, got, err, n)
	}
}

// TestHTTPFrontClientsIsolated (issue 22): two 2026-07-28 clients of one
// `mcp-flow bridge http`, from two addresses. The attacker sends foreign
// Host headers, fills its offload budget, holds 300 slow calls, sends 40
// slow calls with 12 MB bodies and 100 echoes of 4 MB whose answers it never
// reads. Through each attack the victim's echo and its 200 kB download work,
// with links to the front's own address; the front's and the server's peak
// RSS stay under bounds (before the fix: 1.41 GB and 1.04 GB for the 12 MB
// bodies, 1.5 GB for the unread echoes), and the server's other sessions do
// not notice.
func TestHTTPFrontClientsIsolated(t *testing.T) {
	// Six attacks in a row, 11-20 s on a quiet machine: twice that beside
	// another test run, and room to spare.
	e := setupFor(t, 90*time.Second, nil)
	const (
		offloadCap = 8 << 20
		heldCap    = 16 << 20
		bodiesCap  = 32 << 20
	)
	url, front := e.startHTTPFront("-inline-limit", "100000", "-max-session-offload", fmt.Sprint(offloadCap),
		"-max-session-held", fmt.Sprint(heldCap), "-max-client-bodies", fmt.Sprint(bodiesCap), "-write-timeout", "2s")
	victim, attacker := newClient2026(t, url, "127.0.0.1"), newClient2026(t, url, "127.0.0.2")
	ctx := e.ctx
	victim.echo(ctx, 1)
	victim.download(ctx, 2, 200_000, url)
	port := strings.TrimPrefix(url[strings.LastIndex(url, ":"):], ":")
	port = strings.TrimSuffix(port, "/mcp")

	e.during(func() {
		// Foreign Host headers: refused before anything else, on a
		// loopback listener as on any other.
		for _, host := range []string{"127.0.0.1:9999", "evil.example", "evil.example:" + port} {
			code, body, err := attacker.call(ctx, 10, "tools/call", "echo", `{"name":"echo","arguments":{"text":"x"}}`, http.Header{"Host": {host}})
			if err != nil || code != http.StatusForbidden {
				t.Errorf("Host %s: %d %v %.200s, want 403", host, code, err, body)
			}
		}
		// The attacker fills its own offload budget; its next offload
		// fails, the victim's does not.
		if code, body, err := attacker.call(ctx, 11, "tools/call", "generate", fmt.Sprintf(`{"name":"generate","arguments":{"bytes":%d}}`, offloadCap), nil); err != nil || code != http.StatusOK || !strings.Contains(body, "resource_link") {
			t.Fatalf("the attacker's first offload: %d %v %.300s", code, err, body)
		}
		if code, body, err := attacker.call(ctx, 12, "tools/call", "generate", `{"name":"generate","arguments":{"bytes":200000}}`, nil); err != nil || code != http.StatusOK || !strings.Contains(body, "MaxSessionOffload") {
			t.Errorf("the attacker's offload past its cap: %d %v %.300s", code, err, body)
		}
		victim.echo(ctx, 3)
		victim.download(ctx, 4, 200_000, url)

		// 300 slow calls held by the attacker: its own MCP-Flow session
		// reaches the server's in-flight limit, the victim's does not.
		hold, release := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var refused atomic.Int64
		over := make(chan struct{})
		for i := range 300 {
			wg.Go(func() {
				_, body, err := attacker.call(hold, 1000+i, "tools/call", "slow", `{"name":"slow","arguments":{"steps":1,"delayMs":60000}}`, nil)
				if err == nil && strings.Contains(body, "-32005") && refused.Add(1) == 300-256 {
					close(over)
				}
			})
		}
		select {
		case <-over:
		case <-ctx.Done():
			t.Fatalf("the attacker's 300 slow calls: %d refused by the server's limit, want %d", refused.Load(), 300-256)
		}
		victim.echo(ctx, 5)
		victim.download(ctx, 6, 200_000, url)
		release()
		wg.Wait()

		// 40 slow calls with 12 MB bodies: the front holds at most
		// bodiesCap of them until they are answered; the rest get 503.
		big := bytes.Repeat([]byte("b"), 12_000_000)
		hold, release = context.WithCancel(ctx)
		var busy atomic.Int64
		for i := range 40 {
			wg.Go(func() {
				pre, suf, hdr := bigCall(2000+i, "slow", `"steps":1,"delayMs":3000,`, "pad", big)
				code, _, _ := attacker.post(hold, io.MultiReader(bytes.NewReader(pre), bytes.NewReader(big), bytes.NewReader(suf)),
					int64(len(pre)+len(big)+len(suf)), hdr, nil)
				if code == http.StatusServiceUnavailable {
					busy.Add(1)
				}
			})
		}
		victim.echo(ctx, 7)
		victim.download(ctx, 8, 200_000, url)
		wg.Wait()
		release()
		if busy.Load() == 0 {
			t.Errorf("40 × 12 MB bodies within a %d-byte client budget: none got 503", bodiesCap)
		}
		t.Logf("measured: 40 slow calls of 12 MB: %d got 503 (MaxClientBodies)", busy.Load())

		// 100 echoes of 4 MB whose answers the attacker never reads, each
		// on a connection of its own.
		text := bytes.Repeat([]byte("e"), 4_000_000)
		var conns []net.Conn
		var cmu sync.Mutex
		for i := range 100 {
			wg.Go(func() {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
				c, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://"))
				if err != nil {
					t.Errorf("dial: %v", err)
					return
				}
				cmu.Lock()
				conns = append(conns, c)
				cmu.Unlock()
				pre, suf, hdr := bigCall(3000+i, "echo", "", "text", text)
				var req bytes.Buffer
				fmt.Fprintf(&req, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Length: %d\r\n", port, len(pre)+len(text)+len(suf))
				hdr.Write(&req)
				req.WriteString("\r\n")
				req.Write(pre)
				c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				bufs := net.Buffers{req.Bytes(), text, suf}
				bufs.WriteTo(c) // never read
			})
		}
		wg.Wait()
		victim.echo(ctx, 9)
		victim.download(ctx, 10, 200_000, url)
		fm, err := ReadMem(front.PID())
		if err != nil {
			t.Fatalf("the HTTP front is gone: %v; stderr:\n%s", err, front.Stderr)
		}
		sm := e.mem()
		t.Logf("measured: HTTP front %v; server %v", fm, sm)
		// What the front may hold: the attacker's bodies (bodiesCap, 32 MiB)
		// and answers (heldCap, 16 MiB), each in about five copies on the
		// way (body, decoded request, MCP-Flow frame, decoded response,
		// encoded answer), with the collector's slack on top: 274-366 MiB
		// measured in four runs, 1,537 MiB before the fix. The server sees
		// only what the front passed: 154-188 MiB, 413 MiB before.
		if fm.HWM > 512<<20 {
			t.Errorf("the HTTP front's peak RSS %s passes 512 MiB", mib(fm.HWM))
		}
		if sm.HWM > 320<<20 {
			t.Errorf("the server's peak RSS %s passes 320 MiB", mib(sm.HWM))
		}
		for _, c := range conns {
			c.Close()
		}
	})
	victim.echo(ctx, 11)
	e.alive()
}
