package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/demotools"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/tools"
)

// roleEnv makes the test binary, started by a benchmark, play one side in
// a process of its own: "server" (an MCP-Flow server with
// mcp-flow-server's test tools), "bareserver" (bare webtransport-go
// sessions held idle, bareServerRole) or "holclient" (the head-of-line
// client).
const roleEnv = "MCP_FLOW_BENCH_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "server":
		os.Exit(traceRole(serverRole))
	case "holclient":
		os.Exit(traceRole(holClientRole))
	case "relay":
		os.Exit(traceRole(relayRole))
	case "bareserver":
		os.Exit(traceRole(bareServerRole))
	}
	os.Exit(flowtest.LeaveNothing(func() int {
		code := m.Run()
		if fixturePath != "" {
			// sdkFixture's build, shared by the benchmarks of this process.
			os.RemoveAll(filepath.Dir(fixturePath))
		}
		return code
	}))
}

// serverRole serves on 127.0.0.1 and prints "url: …" and "hash: …" on
// stdout; then, for each "heap" line on stdin, it collects garbage and
// prints "heap: HeapInuse sessions: N goroutines: G live: HeapAlloc
// stacks: StackInuse". "profile PATH" writes a heap profile, "goroutines
// PATH" the goroutines' stacks, "heapdump PATH" what debug.FreeOSMemory
// changes of HeapInuse and then a heap dump (debug.WriteHeapDump). It
// ends at stdin's EOF.
// MCP_FLOW_BENCH_MAX_SESSIONS sets flow.Limits.MaxSessions.
func serverRole() int {
	if r, err := strconv.Atoi(os.Getenv("MCP_FLOW_BENCH_MEMPROFILERATE")); err == nil {
		runtime.MemProfileRate = r
	}
	dir, err := os.MkdirTemp("", "mcp-flow-bench-server")
	if err != nil {
		log.Print(err)
		return 1
	}
	defer os.RemoveAll(dir)
	reg, err := tools.New(demotools.New(demotools.Config{Root: dir})...)
	if err != nil {
		log.Print(err)
		return 1
	}
	mux := flow.Mux{}
	reg.Register(mux)
	maxSessions, _ := strconv.Atoi(os.Getenv("MCP_FLOW_BENCH_MAX_SESSIONS"))
	srv, err := flow.NewServer(flow.ServerConfig{Addr: "127.0.0.1:0", TLSConfig: certs.ServerTLSConfig(flowtest.Cert),
		Handler: mux, Capabilities: reg.Capabilities(), Logger: flowtest.Logger(),
		Limits: flow.Limits{MaxSessions: maxSessions, MaxRequestsInFlight: 1024}})
	if err == nil {
		err = srv.Listen()
	}
	if err != nil {
		log.Print(err)
		return 1
	}
	go srv.Serve()
	defer srv.Close()
	fmt.Printf("url: %s\nhash: %s\n", srv.URL(), flowtest.Cert.HashHex())
	return serveStdin(srv.Sessions)
}

// serveStdin answers a server role's commands on stdin (serverRole's),
// with sessions saying how many sessions the role holds, until stdin's
// EOF.
func serveStdin(sessions func() int) int {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if path, ok := strings.CutPrefix(sc.Text(), "heapdump "); ok {
			// What debug.FreeOSMemory changes of HeapInuse, then a heap
			// dump (every live object, span by span). In that order: the
			// dump stops the world for a while, and the packets every
			// session's timers then send at once hold buffers.
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			debug.FreeOSMemory()
			runtime.ReadMemStats(&m1)
			f, err := os.Create(path)
			if err == nil {
				debug.WriteHeapDump(f.Fd())
				err = f.Close()
			}
			if err != nil {
				log.Print(err)
				return 1
			}
			fmt.Printf("heapdump: inuse %d live %d; after FreeOSMemory: inuse %d live %d released %d\n", m0.HeapInuse, m0.HeapAlloc, m1.HeapInuse, m1.HeapAlloc, m1.HeapReleased)
		}
		if path, ok := strings.CutPrefix(sc.Text(), "goroutines "); ok {
			f, err := os.Create(path)
			if err == nil {
				err = pprof.Lookup("goroutine").WriteTo(f, 1)
				f.Close()
			}
			if err != nil {
				log.Print(err)
				return 1
			}
			fmt.Println("profiled")
		}
		if path, ok := strings.CutPrefix(sc.Text(), "profile "); ok {
			runtime.GC()
			f, err := os.Create(path)
			if err == nil {
				err = pprof.WriteHeapProfile(f)
				f.Close()
			}
			if err != nil {
				log.Print(err)
				return 1
			}
			fmt.Println("profiled")
		}
		if sc.Text() == "heap" {
			runtime.GC()
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			fmt.Printf("heap: %d sessions: %d goroutines: %d live: %d stacks: %d\n", m.HeapInuse, sessions(), runtime.NumGoroutine(), m.HeapAlloc, m.StackInuse)
		}
	}
	return 0
}

// holClientRole dials MCP_FLOW_BENCH_URL (pinning MCP_FLOW_BENCH_HASH) with
// cbor and the stream receive window MCP_FLOW_BENCH_WINDOW, runs runHOL
// for MCP_FLOW_BENCH_BYTES and prints the holRun as JSON on stdout. With
// MCP_FLOW_BENCH_SERVER_PID it accounts for both processes' scheduling
// during the transfer (schedFrom).
func holClientRole() int {
	pin, err := certs.ParseHash(os.Getenv("MCP_FLOW_BENCH_HASH"))
	if err != nil {
		log.Print(err)
		return 1
	}
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{pin}})
	window, _ := strconv.Atoi(os.Getenv("MCP_FLOW_BENCH_WINDOW"))
	n, _ := strconv.ParseInt(os.Getenv("MCP_FLOW_BENCH_BYTES"), 10, 64)
	ctx := context.Background()
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	s, err := flow.Dial(dctx, os.Getenv("MCP_FLOW_BENCH_URL"), flow.ClientConfig{TLSConfig: tlsConf, Encodings: []codec.Name{codec.CBOR},
		Logger: flowtest.Quiet, Limits: flow.Limits{StreamReceiveWindow: window}})
	if err != nil {
		log.Print(err)
		return 1
	}
	defer s.Close()
	var sched func() func() *schedAccount
	if pid, err := strconv.Atoi(os.Getenv("MCP_FLOW_BENCH_SERVER_PID")); err == nil {
		sched = func() func() *schedAccount { return schedFrom(pid) }
	}
	var t mcpTarget = &flowTarget{s}
	if trace.IsEnabled() {
		t = tracedTarget{t}
	}
	r, err := runHOLSched(ctx, t, n, sched)
	if err != nil {
		log.Print(err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		log.Print(err)
		return 1
	}
	return 0
}

// tracedTarget marks each ping as a task ("ping") in the Go execution
// trace, for finding in the trace where a slow ping waited.
type tracedTarget struct{ mcpTarget }

// Ping pings within a trace task.
func (t tracedTarget) Ping(ctx context.Context) error {
	ctx, task := trace.NewTask(ctx, "ping")
	defer task.End()
	return t.mcpTarget.Ping(ctx)
}

// pinned is true when each role runs on a core of its own (taskset).
var pinned = func() bool {
	_, err := exec.LookPath("taskset")
	return err == nil && runtime.NumCPU() >= 2
}()

// roleCmd returns a command that runs this test binary in role, on core
// cpu when taskset is at hand (cpu < 0: on any), with env added.
func roleCmd(role string, cpu int, env ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if pinned && cpu >= 0 {
		cmd = exec.Command("taskset", "-c", strconv.Itoa(cpu), os.Args[0], "-test.run=^$")
	} else {
		cmd = exec.Command(os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	return cmd
}

// serverProc is the test binary in its server role.
type serverProc struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	lines     *bufio.Scanner
	stderr    *flowtest.SyncBuffer
	url, hash string
	stopOnce  sync.Once
}

// stop ends the server process (its stdin's EOF) and waits for it; it
// runs once, at the latest with the benchmark's cleanup.
func (p *serverProc) stop(b testing.TB) {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		if err := p.cmd.Wait(); err != nil {
			b.Errorf("server process: %v; stderr:\n%s", err, p.stderr)
		}
	})
}

// startServer starts the server role on core cpu, with up to maxSessions
// sessions and env added, and stops it with the benchmark.
func startServer(b testing.TB, cpu, maxSessions int, env ...string) *serverProc {
	return startRole(b, "server", cpu, append([]string{"MCP_FLOW_BENCH_MAX_SESSIONS=" + strconv.Itoa(maxSessions)}, env...)...)
}

// startRole starts a server role ("server", "bareserver") on core cpu
// with env added, reads its url and hash, and stops it with the benchmark.
func startRole(b testing.TB, role string, cpu int, env ...string) *serverProc {
	p := &serverProc{stderr: &flowtest.SyncBuffer{}}
	p.cmd = roleCmd(role, cpu, env...)
	p.cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.stop(b) })
	p.lines = bufio.NewScanner(out)
	for (p.url == "" || p.hash == "") && p.lines.Scan() {
		k, v, _ := strings.Cut(p.lines.Text(), ": ")
		switch k {
		case "url":
			p.url = v
		case "hash":
			p.hash = v
		}
	}
	if p.url == "" || p.hash == "" {
		b.Fatalf("the server process printed no url and hash; stderr:\n%s", p.stderr)
	}
	return p
}

// serverMem is what the server process says of its memory after GC.
type serverMem struct {
	heapInuse, live, stacks uint64
	sessions, goroutines    int
}

// heap asks the server for its heap in use (after GC), live heap, stacks,
// session count and goroutine count.
func (p *serverProc) heap(b testing.TB) (m serverMem) {
	if _, err := io.WriteString(p.stdin, "heap\n"); err != nil {
		b.Fatal(err)
	}
	if !p.lines.Scan() {
		b.Fatalf("the server process did not answer heap; stderr:\n%s", p.stderr)
	}
	if _, err := fmt.Sscanf(p.lines.Text(), "heap: %d sessions: %d goroutines: %d live: %d stacks: %d", &m.heapInuse, &m.sessions, &m.goroutines, &m.live, &m.stacks); err != nil {
		b.Fatalf("server said %q: %v", p.lines.Text(), err)
	}
	return m
}

// profile has the server write a heap profile to path.
func (p *serverProc) profile(b testing.TB, path string) { p.write(b, "profile", path) }

// goroutines has the server write its goroutines' stacks, grouped
// (pprof's debug=1 text), to path.
func (p *serverProc) goroutines(b testing.TB, path string) { p.write(b, "goroutines", path) }

// write has the server write a profile of kind ("profile", "goroutines") to path.
func (p *serverProc) write(b testing.TB, kind, path string) {
	if _, err := io.WriteString(p.stdin, kind+" "+path+"\n"); err != nil {
		b.Fatal(err)
	}
	if !p.lines.Scan() || p.lines.Text() != "profiled" {
		b.Fatalf("the server process did not write its %s; stderr:\n%s", kind, p.stderr)
	}
}

// tlsFor pins the server process's certificate.
func (p *serverProc) tlsFor(b testing.TB) *flow.ClientConfig {
	pin, err := certs.ParseHash(p.hash)
	if err != nil {
		b.Fatal(err)
	}
	tlsConf, err := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{pin}})
	if err != nil {
		b.Fatal(err)
	}
	return &flow.ClientConfig{TLSConfig: tlsConf, Encodings: []codec.Name{codec.CBOR}, Logger: quiet}
}

// BenchmarkHeadOfLineProcesses: BenchmarkHeadOfLine's open loop with the
// client and the server in two processes, each on one core of its own
// (taskset) when the machine has two: the figure that is not the Go
// scheduler sharing two cores between both ends.
//
// flow-cbor-gomaxprocs-2 runs both processes with GOMAXPROCS=2 though
// each is still pinned to one core (Go then defaults to 1): the kernel
// time-slices the two threads running Go code, so quic-go's connection
// loop need not wait for its packet-reading goroutine to yield the only P.
func BenchmarkHeadOfLineProcesses(b *testing.B) {
	const n = 256 << 20
	for _, c := range []struct {
		window, procs int
	}{{0, 0}, {64 << 10, 0}, {0, 2}} {
		name := "flow-cbor"
		var env []string
		if c.window > 0 {
			name = fmt.Sprintf("flow-cbor-window-%dk", c.window>>10)
		}
		if c.procs > 0 {
			if !pinned {
				continue // unpinned, Go already runs GOMAXPROCS NumCPU
			}
			name += fmt.Sprintf("-gomaxprocs-%d", c.procs)
			env = append(env, "GOMAXPROCS="+strconv.Itoa(c.procs))
		}
		b.Run(name, func(b *testing.B) {
			srv := startServer(b, 1, 0, env...)
			for b.Loop() {
				cl := roleCmd("holclient", 0, append([]string{"MCP_FLOW_BENCH_URL=" + srv.url, "MCP_FLOW_BENCH_HASH=" + srv.hash,
					"MCP_FLOW_BENCH_WINDOW=" + strconv.Itoa(c.window), "MCP_FLOW_BENCH_BYTES=" + strconv.Itoa(n),
					"MCP_FLOW_BENCH_SERVER_PID=" + strconv.Itoa(srv.cmd.Process.Pid)}, env...)...)
				stderr := &flowtest.SyncBuffer{}
				cl.Stderr = stderr
				var out bytes.Buffer
				cl.Stdout = &out
				if err := cl.Start(); err != nil {
					b.Fatal(err)
				}
				stop := make(chan struct{})
				sampled := make(chan []timedQueues)
				t0, c0 := time.Now(), cpuTime(0)
				cores0, s0 := coreBusy(), procCPU(srv.cmd.Process.Pid)
				go func() { sampled <- sampleQueues(cl.Process.Pid, srv.cmd.Process.Pid, stop) }()
				err := cl.Wait()
				close(stop)
				qs := <-sampled
				b.ReportMetric((cpuTime(0)-c0).Seconds()/time.Since(t0).Seconds(), "sampler-cpu")
				if pinned && err == nil {
					reportOthers(b, t0, cores0, s0, srv.cmd.Process.Pid, cl.ProcessState.UserTime()+cl.ProcessState.SystemTime())
				}
				if err != nil {
					b.Fatalf("client process: %v; stderr:\n%s\nserver stderr:\n%s", err, stderr, srv.stderr)
				}
				var r holRun
				if err := json.Unmarshal(out.Bytes(), &r); err != nil {
					b.Fatalf("client output: %v", err)
				}
				r.Queues = qs
				r.report(b)
			}
			b.ReportMetric(map[bool]float64{true: 1, false: 0}[pinned], "pinned")
		})
	}
}

// traceRole runs role, writing a Go execution trace of the whole process to
// $MCP_FLOW_BENCH_TRACE_DIR/<role>.trace when that is set (a diagnosis
// aid for the head-of-line benchmarks: `go tool trace`).
func traceRole(role func() int) int {
	dir := os.Getenv("MCP_FLOW_BENCH_TRACE_DIR")
	if dir == "" {
		return role()
	}
	f, err := os.Create(filepath.Join(dir, os.Getenv(roleEnv)+".trace"))
	if err == nil {
		err = trace.Start(f)
	}
	if err != nil {
		log.Print(err)
		return 1
	}
	code := role()
	trace.Stop()
	if err := f.Close(); err != nil {
		log.Print(err)
		return 1
	}
	return code
}
