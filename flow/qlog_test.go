package flow_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
)

// TestQlogDir: with $QLOGDIR set, one session leaves one qlog per side of
// its QUIC connection, quic-go's names and format (<odcid>_client.sqlog and
// <odcid>_server.sqlog, the same ODCID, JSON-SEQ with QUIC and HTTP/3
// events, the CONNECT's Authorization redacted); unset, it leaves none; a QLOGDIR that cannot be created costs
// the qlog, never the session.
func TestQlogDir(t *testing.T) {
	t.Run("set", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "qlog") // created on demand
		t.Setenv(qlogdir.Env, dir)
		const secret, querySecret = "Bearer qlog-s3cret", "qlog-query-s3cret"
		// A browser's token goes in the CONNECT's query (spec §9.1).
		echoSession(t, func(c *flow.ClientConfig) { c.Header = http.Header{"Authorization": {secret}} }, "?access_token="+querySecret)
		qs := flowtest.ReadQlogs(t, filepath.Join(dir, "*"))
		if len(qs) != 2 || qs[0].ODCID != qs[1].ODCID || qs[0].Side == qs[1].Side {
			t.Fatalf("want <odcid>_client.sqlog and <odcid>_server.sqlog of one connection, got %v", qs)
		}
		for _, q := range qs {
			t.Logf("%s: %d events", q.Name, len(q.Events))
			b, _ := os.ReadFile(filepath.Join(dir, q.Name))
			if bytes.Contains(b, []byte(secret)) || !bytes.Contains(b, []byte(`"[redacted]"`)) {
				t.Errorf("%s: the Authorization header is not redacted", q.Name)
			}
			if bytes.Contains(b, []byte(querySecret)) || !bytes.Contains(b, []byte("access_token=%5Bredacted%5D")) {
				t.Errorf("%s: the token in the CONNECT's query is not redacted", q.Name)
			}
			for _, want := range []string{"transport:packet_sent", "transport:packet_received", "transport:connection_closed", "http3:frame_created", "http3:frame_parsed"} {
				if !slices.Contains(q.Events, want) {
					t.Errorf("%s has no %s event", q.Name, want)
				}
			}
		}
	})
	t.Run("unset", func(t *testing.T) {
		t.Setenv(qlogdir.Env, "")
		t.Chdir(t.TempDir()) // where files of an empty directory name would go
		echoSession(t, nil, "")
		if es, _ := os.ReadDir("."); len(es) != 0 {
			t.Fatalf("QLOGDIR unset, yet %d files appeared: %v", len(es), es)
		}
	})
	t.Run("uncreatable", func(t *testing.T) {
		notDir := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(notDir, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(qlogdir.Env, filepath.Join(notDir, "qlog"))
		echoSession(t, nil, "") // quic-go's own helper would log.Fatal here
	})
}

// echoSession runs one session to a server of its own (at its URL with
// query added): a tools/call of echo,
// then Close, and waits for both sides' qlog files to be written.
func echoSession(t *testing.T, mod func(*flow.ClientConfig), query string) {
	t.Helper()
	srv := startServer(t, nil)
	s := dialURL(t, srv.URL()+query, mod)
	if got := textOf(t, callTool(t, s, "echo", map[string]any{"text": "hi"})); got != "hi" {
		t.Fatalf("echo: %q", got)
	}
	s.Close()
	if !qlogdir.Wait(10 * time.Second) {
		t.Fatal("qlog files still open 10 s after the session closed")
	}
}
