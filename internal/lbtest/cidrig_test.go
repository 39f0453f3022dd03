package lbtest

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/internal/browsertest"
)

// cidRig is three mcp-flow-servers with -server-id 01, 02, 03 behind nginx
// whose njs script (quiclb.js) routes each new UDP flow by the server ID
// in its first datagram (docs/deploy.md, "A balancer that routes by
// connection ID"); TCP is hashed as in nginxConf. With a fleet key every
// server (and every replacement) shares it (-fleet-key-file).
type cidRig struct {
	bins    map[string]string
	sa      serverArgs
	sids    []string
	servers []*server  // servers[i] has -server-id sids[i]
	metrics []string   // servers[i]'s -metrics address (kept by its replacements)
	udp     []*os.File // servers[i]'s UDP socket, held by the test (rigOptions.holdUDP), or nil
	keyFile string     // "" without a fleet key
	hash    string     // the certificate's SHA-256, every server's
	lbAddr  string
	lbPort  int
	ngx     *proc
	ngxDir  string
}

// rigOptions choose a cidRig's variants.
type rigOptions struct {
	// fleetKey: every server shares one fleet key (-gen-fleet-key once,
	// -fleet-key-file for all); else each process has a random one.
	fleetKey bool
	// hashOnly: nginx without the njs routing (the hash of the client's
	// address and port only), to see a check fail without routing by
	// connection ID (MCP_FLOW_LB_HASH_ONLY=1).
	hashOnly bool
	// holdUDP: the test holds each server's UDP socket and hands it to the
	// server and its replacements (-udp-fd, heldUDP), so that the address
	// never closes across a restart or a kill (MCP_FLOW_LB_NO_HOLD=1 binds
	// as before, to compare).
	holdUDP bool
}

// startCIDRig builds the commands (the server and pkgs), starts the three
// servers and nginx.
func startCIDRig(t *testing.T, o rigOptions, pkgs ...string) *cidRig {
	t.Helper()
	if os.Getenv("MCP_FLOW_LB_HASH_ONLY") == "1" {
		o.hashOnly = true
	}
	if os.Getenv("MCP_FLOW_LB_NO_HOLD") == "1" {
		o.holdUDP = false
	}
	nginxBin := browsertest.Debian(t, "nginx", "nginx")
	module := browsertest.DebianFile(t, streamModule, "libnginx-mod-stream")
	jsModule := browsertest.DebianFile(t, streamJSModule, "libnginx-mod-stream-js")
	script, err := filepath.Abs("quiclb.js")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := &cidRig{bins: build(t, dir, append([]string{"github.com/mcp-flow/mcp-flow/cmd/mcp-flow-server"}, pkgs...)...), sids: []string{"01", "02", "03"}}
	// One certificate for the three, passed as a deployment passes its
	// own (-cert, -key): clients pin one hash whatever server nginx picks.
	certDir := filepath.Join(dir, "cert")
	cert, _, err := certs.LoadOrCreateDev(certDir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r.hash = cert.HashHex()
	r.sa = serverArgs{bin: r.bins["mcp-flow-server"], cert: filepath.Join(certDir, certs.DevCertFile), key: filepath.Join(certDir, certs.DevKeyFile), root: dir, tally: filepath.Join(dir, "tally")}
	if o.fleetKey {
		r.keyFile = filepath.Join(dir, "fleet.key")
		if out, err := exec.Command(r.sa.bin, "-gen-fleet-key", r.keyFile).CombinedOutput(); err != nil {
			t.Fatalf("-gen-fleet-key: %v\n%s", err, out)
		}
	}
	backends := map[string]string{}
	var all []string
	for i := range r.sids {
		r.metrics = append(r.metrics, fmt.Sprintf("127.0.0.1:%d", freePort(t)))
		addr := "127.0.0.1:0"
		var udp *os.File
		if o.holdUDP {
			udp, addr = heldUDP(t)
		}
		r.udp = append(r.udp, udp)
		r.servers = append(r.servers, startServerOn(t, r.sa, addr, udp, r.serverFlags(i)...))
		backends[r.sids[i]] = r.servers[i].addr
		all = append(all, r.servers[i].addr)
	}
	r.lbPort = freePort(t)
	r.lbAddr = fmt.Sprintf("127.0.0.1:%d", r.lbPort)
	r.ngxDir = filepath.Join(dir, "nginx")
	if err := os.Mkdir(r.ngxDir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := nginxConf(module, r.ngxDir, r.lbAddr, all)
	if !o.hashOnly {
		conf = strings.Replace(conf, module+";\n", module+";\nload_module "+jsModule+";\n", 1)
		conf = strings.Replace(conf, "error_log stderr notice;", "error_log stderr info;", 1)
		conf = strings.Replace(conf, "stream {\n", "stream {\n"+cidRouting(script, 1, backends), 1)
		conf = strings.Replace(conf, "        proxy_pass mcp_flow_udp;\n", "        js_preread quic_lb.preread;\n        proxy_pass $quic_lb_upstream;\n", 1)
	}
	r.ngx = startNginx(t, nginxBin, r.ngxDir, conf)
	t.Logf("servers %v behind nginx at %s (UDP and TCP), routing QUIC by server ID: %v, fleet key: %v, UDP sockets held across restarts: %v", backends, r.lbAddr, !o.hashOnly, o.fleetKey, o.holdUDP)
	return r
}

// serverFlags are server i's own flags: its server ID, the fleet key.
func (r *cidRig) serverFlags(i int) []string {
	f := []string{"-server-id", r.sids[i], "-metrics", r.metrics[i]}
	if r.keyFile != "" {
		f = append(f, "-fleet-key-file", r.keyFile)
	}
	return f
}

// replace starts server i again on its address, with its flags (after it
// exited: a drain or a kill).
func (r *cidRig) replace(t *testing.T, i int) {
	t.Helper()
	r.servers[i] = startServerOn(t, r.sa, r.servers[i].addr, r.udp[i], r.serverFlags(i)...)
}

// heldUDP reports whether the test holds the servers' UDP sockets across
// their restarts (rigOptions.holdUDP).
func (r *cidRig) heldUDP() bool { return r.udp[0] != nil }

// sidOf is the server ID of the server at addr.
func (r *cidRig) sidOf(addr string) string {
	for i, s := range r.servers {
		if s.addr == addr {
			return r.sids[i]
		}
	}
	return ""
}

// busiest is the server holding the most MCP-Flow sessions now
// (mcpflow_sessions_open, from each server's -metrics), and how many.
func (r *cidRig) busiest(t *testing.T) (int, int) {
	t.Helper()
	best, most := 0, -1
	for i := range r.servers {
		resp, err := http.Get("http://" + r.metrics[i] + "/metrics")
		if err != nil {
			t.Fatalf("server %s's metrics: %v", r.sids[i], err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "mcpflow_sessions_open") {
				f := strings.Fields(l)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				n += int(v)
			}
		}
		if n > most {
			best, most = i, n
		}
	}
	return best, most
}
