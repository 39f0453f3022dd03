package lbtest

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// streamJSModule is where Debian's libnginx-mod-stream-js puts njs for
// nginx's stream module.
const streamJSModule = "/usr/lib/nginx/modules/ngx_stream_js_module.so"

// rebindBound bounds a ping after the client's address changed: through
// the balancer it is answered in a round trip (measured 1 to 3 ms on the
// 2-core machine under load); a connection sent to the wrong server would
// wait for its idle timeout (8 s).
const rebindBound = 30 * time.Second

// TestRouteByConnectionID (make lb): three servers with -server-id 01, 02,
// 03 behind nginx whose njs script (quiclb.js) reads the server ID in each
// new UDP flow's first datagram (docs/deploy.md, "A balancer that routes
// by connection ID"). Two flow clients connect (a new connection's Initial
// names no server: the flow is hashed), then each changes its address
// twice (a NAT rebinding: a relay in front of it takes a new source
// port): nginx sees a new flow whose first datagram is a short-header
// packet, routes it by the server ID of its Destination Connection ID,
// and the session carries on (a ping answered). The nginx log names, for
// each new flow, the server ID the client's packets carry.
func TestRouteByConnectionID(t *testing.T) {
	if os.Getenv("MCP_FLOW_LB") != "1" {
		t.Skip("the load-balancer tests run with MCP_FLOW_LB=1 (make lb): they install nginx and njs")
	}
	rig := startCIDRig(t, rigOptions{})
	backends := map[string]string{}
	for i, sid := range rig.sids {
		backends[sid] = rig.servers[i].addr
	}
	lbAddr, ngx := rig.lbAddr, rig.ngx

	tlsConf := flowtest.PinnedTLS(t, rig.hash)
	for c := range 2 {
		r := newRebinder(t, lbAddr)
		ctx, cancel := context.WithTimeout(context.Background(), rebindBound)
		s, err := flow.Dial(ctx, "https://"+r.addr()+flow.DefaultPath, flow.ClientConfig{TLSConfig: tlsConf})
		cancel()
		if err != nil {
			t.Fatalf("client %d: %v", c, err)
		}
		t.Cleanup(func() { s.Close() })
		for step := range 3 {
			if step > 0 {
				r.rebind(t)
			}
			ctx, cancel := context.WithTimeout(context.Background(), rebindBound)
			start := time.Now()
			err := s.Ping(ctx)
			cancel()
			sid := r.lastServerID(1)
			if err != nil {
				t.Fatalf("client %d, address %d (server ID %q in its packets): ping: %v; nginx:\n%s", c, step, sid, err, tail(ngx.stderr.String()))
			}
			if step > 0 {
				line := fmt.Sprintf("first datagram of 127.0.0.1:%d names server ID \"%s\"", r.port(), sid)
				if !strings.Contains(ngx.stderr.String(), line) {
					t.Fatalf("client %d, address %d: nginx did not log %q; nginx:\n%s", c, step, line, tail(ngx.stderr.String()))
				}
			}
			t.Logf("client %d, address %d (port %d): its connection IDs name server %s (%s); ping answered in %v", c, step, r.port(), sid, backends[sid], time.Since(start).Round(time.Microsecond))
		}
	}
}

// cidRouting is the stream-level configuration of routing by server ID:
// njs's script, the variables it sets, and the map from a server ID (hex)
// to an upstream of one server; any other (a new connection's Initial)
// goes to mcp_flow_udp, the hash of the client's address and port.
func cidRouting(script string, sidLen int, backends map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "    js_import quic_lb from %s;\n    js_var $quic_lb_sid;\n    js_var $quic_lb_sid_len %d;\n", script, sidLen)
	b.WriteString("    map $quic_lb_sid $quic_lb_upstream {\n")
	for sid := range backends {
		fmt.Fprintf(&b, "        %s quic_sid_%s;\n", sid, sid)
	}
	b.WriteString("        default mcp_flow_udp;\n    }\n")
	for sid, addr := range backends {
		fmt.Fprintf(&b, "    upstream quic_sid_%s { server %s max_fails=0; }\n", sid, addr)
	}
	return b.String()
}

// rebinder relays one client's datagrams to target from a socket it can
// replace (rebind: a NAT that gives the client a new port), keeping the
// server IDs its short-header packets carry.
type rebinder struct {
	front  *net.UDPConn
	target *net.UDPAddr
	wg     sync.WaitGroup

	mu     sync.Mutex
	back   *net.UDPConn
	client *net.UDPAddr
	last   []byte // the last short-header packet's first 32 octets
}

func newRebinder(t *testing.T, target string) *rebinder {
	t.Helper()
	ta, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		t.Fatal(err)
	}
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &rebinder{front: front, target: ta}
	r.rebind(t)
	r.wg.Go(r.up)
	t.Cleanup(func() {
		front.Close()
		r.mu.Lock()
		r.back.Close()
		r.mu.Unlock()
		r.wg.Wait()
	})
	return r
}

func (r *rebinder) addr() string { return r.front.LocalAddr().String() }

// port is the source port the relay sends from now.
func (r *rebinder) port() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.back.LocalAddr().(*net.UDPAddr).Port
}

// rebind sends from a new socket from now on; the old one is closed.
func (r *rebinder) rebind(t *testing.T) {
	t.Helper()
	back, err := net.DialUDP("udp", nil, r.target)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	old := r.back
	r.back = back
	r.mu.Unlock()
	if old != nil {
		old.Close()
	}
	r.wg.Go(func() { r.down(back) })
}

// up forwards the client's datagrams.
func (r *rebinder) up() {
	buf := make([]byte, 65536)
	for {
		n, a, err := r.front.ReadFromUDP(buf)
		if err != nil {
			return
		}
		r.mu.Lock()
		r.client = a
		if n > 0 && buf[0]&0x80 == 0 {
			r.last = bytes.Clone(buf[:min(n, 32)])
		}
		back := r.back
		r.mu.Unlock()
		back.Write(buf[:n])
	}
}

// down forwards what comes back on one socket.
func (r *rebinder) down(back *net.UDPConn) {
	buf := make([]byte, 65536)
	for {
		n, err := back.Read(buf)
		if err != nil {
			return
		}
		r.mu.Lock()
		c := r.client
		r.mu.Unlock()
		if c != nil {
			r.front.WriteToUDP(buf[:n], c)
		}
	}
}

// lastServerID is the server ID (sidLen octets, hex) of the last
// short-header packet the client sent: after the ID's first octet.
func (r *rebinder) lastServerID(sidLen int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.last) < 2+sidLen {
		return ""
	}
	return hex.EncodeToString(r.last[2 : 2+sidLen])
}
