package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/mcp-flow/mcp-flow/internal/lossrelay"
)

// relayEnv carries, as JSON, the relaySpec of the test binary's "relay"
// role.
const relayEnv = "MCP_FLOW_BENCH_RELAY"

// relaySpec is the relay a "relay" role process runs: lossrelay's UDP
// relay (TCP false) or TCP relay towards Target, with paths Up and Down.
type relaySpec struct {
	TCP      bool
	Target   string
	Up, Down lossrelay.Path
	Seed     uint64
	Record   bool
}

// relayCounters is a relay process's answer to "stats".
type relayCounters struct{ Up, Down lossrelay.Counters }

// relayRecords is a UDP relay process's answer to "records".
type relayRecords struct {
	Up, Down           []lossrelay.Record
	UpDrops, DownDrops []time.Time
}

// relayRole runs the relay of $MCP_FLOW_BENCH_RELAY (a relaySpec) and
// prints "addr: host:port" on stdout; then, for each line on stdin, it
// prints on one line, as JSON, its counters ("stats": relayCounters) or,
// for a UDP relay, its records ("records": relayRecords' Up and Down)
// or queue drops ("drops": UpDrops and DownDrops). It closes the
// relay and ends at stdin's EOF. A process of its own, so that the link
// model does not wait for the Go scheduler of the ends it carries.
func relayRole() int {
	var spec relaySpec
	if err := json.Unmarshal([]byte(os.Getenv(relayEnv)), &spec); err != nil {
		log.Print(err)
		return 1
	}
	var relay interface {
		relayStats
		Close() error
	}
	var addr string
	var rec recorder
	if spec.TCP {
		r, err := lossrelay.NewTCP(spec.Target, spec.Up, spec.Down)
		if err != nil {
			log.Print(err)
			return 1
		}
		relay, addr = r, r.Addr().String()
	} else {
		target, err := net.ResolveUDPAddr("udp", spec.Target)
		if err != nil {
			log.Print(err)
			return 1
		}
		r, err := lossrelay.New(lossrelay.Config{Target: target, Up: spec.Up, Down: spec.Down, Seed: spec.Seed, Record: spec.Record})
		if err != nil {
			log.Print(err)
			return 1
		}
		relay, addr, rec = r, r.Addr().String(), r
	}
	defer relay.Close()
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	fmt.Fprintf(out, "addr: %s\n", addr)
	if err := out.Flush(); err != nil {
		log.Print(err)
		return 1
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var err error
		switch sc.Text() {
		case "stats":
			var c relayCounters
			c.Up, c.Down = relay.Stats()
			err = enc.Encode(c)
		case "records":
			var r relayRecords
			if rec != nil {
				r.Up, r.Down = rec.Records()
			}
			err = enc.Encode(r)
		case "drops":
			var r relayRecords
			if rec != nil {
				r.UpDrops, r.DownDrops = rec.QueueDrops()
			}
			err = enc.Encode(r)
		default:
			err = fmt.Errorf("relay role: unknown command %q", sc.Text())
		}
		if err == nil {
			err = out.Flush()
		}
		if err != nil {
			log.Print(err)
			return 1
		}
	}
	return 0
}

// relayProc is the test binary in its relay role, seen from the
// benchmark: its Stats (and, for a UDP relay, udpRelayProc's Records and
// QueueDrops) ask the process. Its methods fail b, and are for the
// benchmark's goroutine.
type relayProc struct {
	b      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Reader
	stderr *flowtest.SyncBuffer
	addr   string
	once   sync.Once
}

// udpRelayProc is a relayProc running lossrelay's UDP relay with
// Config.Record: a recorder.
type udpRelayProc struct{ *relayProc }

// startRelay starts the relay role for spec, on any core, and kills and
// reaps it with the benchmark.
func startRelay(b testing.TB, spec relaySpec) *relayProc {
	js, err := json.Marshal(spec)
	if err != nil {
		b.Fatal(err)
	}
	p := &relayProc{b: b, stderr: &flowtest.SyncBuffer{}}
	// One P: the relay's work is a few goroutines passing datagrams on;
	// with two, its idle Ms spin looking for work (0.46-0.52 CPU-s/s
	// against 0.29-0.31 with one, at the shaped link's rate) on the
	// cores the ends need.
	p.cmd = roleCmd("relay", -1, relayEnv+"="+string(js), "GOMAXPROCS=1")
	p.cmd.Stderr = p.stderr
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
	b.Cleanup(p.stop)
	p.lines = bufio.NewReaderSize(out, 1<<20)
	line, err := p.lines.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "addr: ")
	if err != nil || !ok {
		b.Fatalf("the relay process printed no address (%q, %v); stderr:\n%s", line, err, p.stderr)
	}
	p.addr = addr
	return p
}

// stop kills the relay process and reaps it (once). Everything the
// benchmark reports was asked of it before.
func (p *relayProc) stop() {
	p.once.Do(func() {
		p.stdin.Close()
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
}

// pid is the relay process's.
func (p *relayProc) pid() int { return p.cmd.Process.Pid }

// ask sends the command cmd and decodes the one-line JSON answer into v.
func (p *relayProc) ask(cmd string, v any) {
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		p.b.Fatalf("relay process: %v; stderr:\n%s", err, p.stderr)
	}
	line, err := p.lines.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, v)
	}
	if err != nil {
		p.b.Fatalf("relay process, %s: %v; stderr:\n%s", cmd, err, p.stderr)
	}
}

// Stats asks the relay process for its counters.
func (p *relayProc) Stats() (up, down lossrelay.Counters) {
	var c relayCounters
	p.ask("stats", &c)
	return c.Up, c.Down
}

// Records asks the relay process for its records.
func (p udpRelayProc) Records() (up, down []lossrelay.Record) {
	var r relayRecords
	p.ask("records", &r)
	return r.Up, r.Down
}

// QueueDrops asks the relay process for its queue drops.
func (p udpRelayProc) QueueDrops() (up, down []time.Time) {
	var r relayRecords
	p.ask("drops", &r)
	return r.UpDrops, r.DownDrops
}

// TestRelayProcess: the relay role carries datagrams both ways through its
// model in a process of its own, answers its counters, records and queue
// drops, and is gone after the test's cleanup.
func TestRelayProcess(t *testing.T) {
	echo, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := echo.ReadFromUDP(buf)
			if err != nil {
				return
			}
			echo.WriteToUDP(buf[:n], from)
		}
	}()
	var pid int
	t.Run("relay", func(t *testing.T) {
		path := lossrelay.Path{Rate: 1e4, Delay: time.Millisecond, Queue: 2500}
		p := udpRelayProc{startRelay(t, relaySpec{Target: echo.LocalAddr().String(), Up: path, Down: path, Seed: 1, Record: true})}
		pid = p.pid()
		c, err := net.Dial("udp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(time.Minute)) // a failure rather than a hang
		// Three datagrams at once: at 10 kB/s the 2500-byte queue holds
		// two (100 ms each), and drops the third.
		for range 3 {
			if _, err := c.Write(make([]byte, 1000)); err != nil {
				t.Fatal(err)
			}
		}
		buf := make([]byte, 2048)
		for range 2 {
			if n, err := c.Read(buf); err != nil || n != 1000 {
				t.Fatalf("echo: %d bytes, %v", n, err)
			}
		}
		up, down := p.Stats()
		if up.Forwarded != 2 || up.QueueDropped != 1 || down.Forwarded != 2 || up.Bytes != 2000 {
			t.Errorf("stats: up %+v, down %+v", up, down)
		}
		ru, rd := p.Records()
		if len(ru) != 2 || len(rd) != 2 || ru[0].Len != 1000 || ru[0].Sent.Before(ru[0].Due) || ru[0].Due.Sub(ru[0].Arrived) < time.Millisecond {
			t.Errorf("records: up %+v, down %+v", ru, rd)
		}
		du, dd := p.QueueDrops()
		if len(du) != 1 || len(dd) != 0 || du[0].Before(ru[0].Arrived) {
			t.Errorf("queue drops: up %v, down %v", du, dd)
		}
	})
	// The subtest's cleanup has reaped the relay process: its pid is free
	// (or another process's, which is not a relay role).
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && strings.Contains(string(b), roleEnv+"=relay") {
		t.Errorf("relay process %d still there", pid)
	}
}
