package hostile

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// serverBin is mcp-flow-server, built once for the test binary; or the one
// that $MCP_FLOW_HOSTILE_SERVER names (to attack another build, such as
// one from before a fix).
var serverBin = os.Getenv("MCP_FLOW_HOSTILE_SERVER")

// cliBin is mcp-flow (its stdio and HTTP fronts), built once for the test
// binary; or the one that $MCP_FLOW_HOSTILE_CLI names.
var cliBin = os.Getenv("MCP_FLOW_HOSTILE_CLI")

func TestMain(m *testing.M) {
	os.Exit(flowtest.LeaveNothing(func() int { return run(m) }))
}

// run builds the binaries the attacks need, runs the tests and removes the
// binaries.
func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "hostile-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var want []string
	if serverBin == "" {
		want = append(want, "mcp-flow-server")
	}
	if cliBin == "" {
		want = append(want, "mcp-flow")
	}
	if len(want) > 0 {
		var bins []string
		if bins, err = Build(dir, want...); err == nil {
			for i, name := range want {
				if name == "mcp-flow-server" {
					serverBin = bins[i]
				} else {
					cliBin = bins[i]
				}
			}
		}
	}
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	return code
}

// env is one attack's server, with a well-behaved observer session whose
// idle ping latency has been measured.
type env struct {
	t    *testing.T
	ctx  context.Context // bounds the whole attack
	srv  *Server
	obs  *Observer
	idle time.Duration // the observer's idle median ping
	base Mem           // the server's memory before the attack
	cpu0 time.Duration // and its CPU time
}

// attackTimeout bounds each attack, server start included.
const attackTimeout = 30 * time.Second

// setup starts a server with args, connects the observer and measures its
// idle latency (the median of 20 pings), the server's memory and CPU time.
func setup(t *testing.T, args ...string) *env {
	t.Helper()
	return setupEnv(t, nil, args...)
}

// setupEnv is setup with env added to the server's environment.
func setupEnv(t *testing.T, environ []string, args ...string) *env {
	t.Helper()
	return setupFor(t, attackTimeout, environ, args...)
}

// setupFor is setupEnv for an attack bounded by bound instead of
// attackTimeout.
func setupFor(t *testing.T, bound time.Duration, environ []string, args ...string) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, srv: StartServerEnv(t, serverBin, environ, args...)}
	var err error
	if e.obs, err = Observe(ctx, e.srv.URL, e.srv.TLS); err != nil {
		t.Fatalf("observer: %v; server stderr:\n%s", err, e.srv.Stderr)
	}
	t.Cleanup(func() { e.obs.S.Close() })
	d, err := e.obs.Pings(ctx, 20)
	if err != nil {
		t.Fatalf("%v; server stderr:\n%s", err, e.srv.Stderr)
	}
	e.idle = Quantile(d, 0.5)
	e.base = e.mem()
	e.cpu0 = e.cpuTime()
	return e
}

// peer dials a raw session, closed with the test.
func (e *env) peer() *Peer {
	e.t.Helper()
	p, err := Dial(e.ctx, e.srv.URL, e.srv.TLS, nil)
	if err != nil {
		e.t.Fatalf("raw dial: %v; server stderr:\n%s", err, e.srv.Stderr)
	}
	e.t.Cleanup(p.Close)
	return p
}

// initPeer dials a raw session and initializes it in JSON, with datagrams.
func (e *env) initPeer() *Peer { return e.initPeerDatagrams(true) }

func (e *env) initPeerDatagrams(datagrams bool) *Peer {
	e.t.Helper()
	return e.initialized(e.peer(), datagrams)
}

// initialized initializes p in JSON.
func (e *env) initialized(p *Peer, datagrams bool) *Peer {
	e.t.Helper()
	if err := p.InitializeJSONSession(e.ctx, datagrams); err != nil {
		e.t.Fatalf("initialize: %v; server stderr:\n%s", err, e.srv.Stderr)
	}
	return p
}

func (e *env) mem() Mem {
	e.t.Helper()
	m, err := e.srv.Mem()
	if err != nil {
		e.t.Fatalf("%v (has the server died?); stderr:\n%s", err, e.srv.Stderr)
	}
	return m
}

func (e *env) cpuTime() time.Duration {
	e.t.Helper()
	c, err := e.srv.CPU()
	if err != nil {
		e.t.Fatalf("%v (has the server died?); stderr:\n%s", err, e.srv.Stderr)
	}
	return c
}

// during runs attack while the observer pings, then checks that the
// observer's median ping stayed within LatencyBound of its idle median,
// and logs the figures.
func (e *env) during(attack func()) {
	e.t.Helper()
	stop := e.obs.During(e.ctx)
	t0 := time.Now()
	attack()
	took := time.Since(t0)
	d, err := stop()
	if err != nil {
		e.t.Fatalf("%v; server stderr:\n%s", err, e.srv.Stderr)
	}
	p50, p90, bound := Quantile(d, 0.5), Quantile(d, 0.9), LatencyBound(e.idle)
	e.t.Logf("measured: attack took %v; observer ping idle p50 %v, during the attack p50 %v p90 %v max %v (%d pings), bound %v",
		took.Round(time.Millisecond), e.idle.Round(10*time.Microsecond), p50.Round(10*time.Microsecond),
		p90.Round(10*time.Microsecond), Quantile(d, 1).Round(10*time.Microsecond), len(d), bound)
	if p50 > bound {
		e.t.Errorf("the observer's median ping during the attack was %v, more than max(10 × idle %v, %v)", p50, e.idle, LatencyFloor)
	}
}

// report logs the server's memory and CPU time spent since setup, and
// returns them.
func (e *env) report() (Mem, time.Duration) {
	e.t.Helper()
	m, c := e.mem(), e.cpuTime()-e.cpu0
	e.t.Logf("measured: server before %v; after %v; CPU %.2f s", e.base, m, c.Seconds())
	return m, c
}

// alive checks that the server still answers the observer and that
// nothing crashed it.
func (e *env) alive() {
	e.t.Helper()
	if _, err := e.obs.Pings(e.ctx, 1); err != nil {
		e.t.Fatalf("after the attack: %v; server stderr:\n%s", err, e.srv.Stderr)
	}
	select {
	case <-e.srv.Exited():
		e.t.Fatalf("the server exited: %v; stderr:\n%s", e.srv.Wait(e.ctx), e.srv.Stderr)
	default:
	}
}

// expectError reads replies on p until one that is not a notification and
// checks that it is an error with code and the raw id.
func (e *env) expectError(p *Peer, what, id string, code int) Reply {
	e.t.Helper()
	for {
		r, err := p.ReadReply(e.ctx)
		if err != nil {
			e.t.Fatalf("%s: reading the reply: %v; server stderr:\n%s", what, err, e.srv.Stderr)
		}
		if r.Method != "" {
			continue
		}
		if r.Code != code || r.ID != id {
			e.t.Fatalf("%s: got id %s code %d %q, want id %s code %d", what, r.ID, r.Code, r.Message, id, code)
		}
		return r
	}
}

// liveHeap makes the server (started with GODEBUG=gctrace=1) collect
// garbage, by sending it 1 MiB pings on p until a new collection is
// reported, and returns what that collection found live (give or take the
// few pings then in flight).
func (e *env) liveHeap(p *Peer) GCTrace {
	e.t.Helper()
	before := e.srv.LastGC().N
	big := []byte(`{"jsonrpc":"2.0","id":"gc","method":"ping","params":{"pad":"` + strings.Repeat("g", 1<<20) + `"}}`)
	for e.srv.LastGC().N == before {
		if err := p.WriteFrame(big); err != nil {
			e.t.Fatal(err)
		}
		for {
			r, err := p.ReadReply(e.ctx)
			if err != nil {
				e.t.Fatalf("waiting for a collection: %v; server stderr:\n%s", err, e.srv.Stderr)
			}
			if r.ID == `"gc"` {
				break
			}
		}
	}
	return e.srv.LastGC()
}

// MiB formats a byte count.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
