package lbtest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
)

// The rig: the binaries, three mcp-flow-server processes that share one
// certificate and one tally file, nginx in front of them, and the HTTP
// front (mcp-flow bridge http) pointed at nginx. Every process is the
// test's child, waited for; nothing outlives the test.

// logDirEnv names a directory that keeps every process's stderr after the
// test, with -debug on the servers and the HTTP front (for debugging a
// failure; the test's own output has the tails).
const logDirEnv = "MCP_FLOW_LB_LOGDIR"

// logSeq numbers the log files.
var logSeq atomic.Int32

// debugFlag is -debug when logDirEnv is set.
func debugFlag() []string {
	if os.Getenv(logDirEnv) != "" {
		return []string{"-debug"}
	}
	return nil
}

// Bounds of the waits on processes (events, not sleeps: each wait ends as
// soon as its event comes).
const (
	startBound = 30 * time.Second // a process announces itself
	exitBound  = 30 * time.Second // a process exits after its signal (the drain is 10 s at most)
)

// build builds the commands into dir and returns their paths by name.
func build(t *testing.T, dir string, pkgs ...string) map[string]string {
	t.Helper()
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	out, err := exec.Command("go", append(args, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bins := map[string]string{}
	for _, p := range pkgs {
		bins[filepath.Base(p)] = filepath.Join(dir, filepath.Base(p))
	}
	return bins
}

// proc is a child process with its stderr kept, and its exit.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr *flowtest.SyncBuffer
	exited chan struct{}
	err    error // after exited
}

// start starts cmd; stderr is kept (and, with lines, each line is also
// handed to lines, for a caller waiting on one).
func start(t *testing.T, name string, cmd *exec.Cmd, lines func(string)) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, stderr: &flowtest.SyncBuffer{}, exited: make(chan struct{})}
	// A process group of its own: the cleanup ends it and whatever it
	// started (nginx's workers) by the group's id, never by name.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var logFile io.Writer = io.Discard
	if dir := os.Getenv(logDirEnv); dir != "" {
		// Every process's stderr, kept after the test (for debugging).
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%02d-%s", logSeq.Add(1), strings.NewReplacer(" ", "_", ":", "_", "/", "_").Replace(name))
		f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		logFile = f
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.stderr.Write([]byte(sc.Text() + "\n"))
			logFile.Write([]byte(sc.Text() + "\n"))
			if lines != nil {
				lines(sc.Text())
			}
		}
		io.Copy(io.Discard, pipe)
	}()
	go func() {
		<-copied // Wait closes the pipe: read it to the end first
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

// kill ends the process group with SIGKILL and waits (a no-op after the
// process has exited and its group is empty).
func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// stop sends sig and waits for the exit; it fails the test unless the
// process exits with status 0 within exitBound.
func (p *proc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	select {
	case <-p.exited:
	case <-time.After(exitBound):
		t.Fatalf("%s has not exited %v after %v; stderr:\n%s", p.name, exitBound, sig, tail(p.stderr.String()))
	}
	if p.err != nil {
		t.Fatalf("%s after %v: %v; stderr:\n%s", p.name, sig, p.err, tail(p.stderr.String()))
	}
}

// tail is the end of a log, for a failure message.
func tail(s string) string {
	const max = 8 << 10
	if len(s) > max {
		return "…" + s[len(s)-max:]
	}
	return s
}

// server is one mcp-flow-server process.
type server struct {
	*proc
	addr string // 127.0.0.1:port, UDP and TCP
}

// serverArgs are the flags of every server process: one certificate (all
// three must present the same one: clients pin one hash, and nginx cannot
// tell them apart), -drain 10 s, the tally file through the environment.
type serverArgs struct {
	bin, cert, key, root, tally string
}

// startServer starts mcp-flow-server on addr (127.0.0.1:0 for a free port,
// or the port of the server it replaces) with extra flags and waits for
// its announcement.
func startServer(t *testing.T, a serverArgs, addr string, extra ...string) *server {
	t.Helper()
	return startServerOn(t, a, addr, nil, extra...)
}

// startServerOn is startServer, serving on udp (-udp-fd) when it is not
// nil: a UDP socket bound to addr that the test holds across the server's
// restarts, as systemd's socket activation does (heldUDP).
func startServerOn(t *testing.T, a serverArgs, addr string, udp *os.File, extra ...string) *server {
	t.Helper()
	if udp != nil {
		extra = append([]string{"-udp-fd", "3"}, extra...)
	}
	cmd := exec.Command(a.bin, append(append([]string{"-addr", addr, "-cert", a.cert, "-key", a.key, "-root", a.root, "-drain", "10s"}, debugFlag()...), extra...)...)
	if udp != nil {
		cmd.ExtraFiles = []*os.File{udp} // fd 3
	}
	cmd.Env = append(os.Environ(), "MCP_FLOW_TEST_TALLY="+a.tally)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, "mcp-flow-server "+addr, cmd, nil)
	announced := make(chan string, 1)
	go func() {
		u, _ := flowtest.Announcement(stdout)
		announced <- u
		io.Copy(io.Discard, stdout)
	}()
	select {
	case u := <-announced:
		pu, err := url.Parse(u)
		if u == "" || err != nil {
			<-p.exited
			t.Fatalf("mcp-flow-server -addr %s announced no URL (%v); stderr:\n%s", addr, p.err, p.stderr)
		}
		p.name = "mcp-flow-server " + pu.Host
		return &server{proc: p, addr: pu.Host}
	case <-time.After(startBound):
		t.Fatalf("mcp-flow-server -addr %s announced nothing in %v; stderr:\n%s", addr, startBound, p.stderr)
	}
	return nil
}

var drainedRE = regexp.MustCompile(`msg="shutting down".* sessions=(\d+)`)

// term stops the server with SIGTERM and checks that it drained: exit 0
// and "shut down cleanly". It returns how many sessions it held when the
// signal came (its own log line).
func (s *server) term(t *testing.T) int {
	t.Helper()
	s.stop(t, syscall.SIGTERM)
	logs := s.stderr.String()
	if !strings.Contains(logs, "shut down cleanly") {
		t.Fatalf("%s exited 0 without saying it shut down cleanly; stderr:\n%s", s.name, tail(logs))
	}
	m := drainedRE.FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("%s did not log the sessions it held at SIGTERM; stderr:\n%s", s.name, tail(logs))
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// freePort returns a port free on 127.0.0.1 for both UDP and TCP (nginx
// listens on both).
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		ln.Close()
		if err == nil {
			pc.Close()
			return port
		}
	}
	t.Fatal("no port free for both UDP and TCP on 127.0.0.1")
	return 0
}

// heldUDP binds a UDP socket on 127.0.0.1 at a port free for TCP too, and
// returns it as a file the test holds until its end: the servers of that
// address get it in turn (startServerOn), so that the address stays open
// between a server's exit (or kill) and its replacement, as with systemd's
// socket activation. Datagrams of that gap wait in the socket for the
// replacement; without it they draw ICMP port unreachable, and nginx then
// stops relaying that flow's answers (docs/deploy.md, "Fleet").
func heldUDP(t *testing.T) (*os.File, string) {
	t.Helper()
	for range 20 {
		port := freePort(t)
		pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err != nil {
			continue // taken since freePort: another
		}
		f, err := pc.File()
		pc.Close() // f is a copy of the descriptor: the socket stays
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f, pc.LocalAddr().String()
	}
	t.Fatal("no UDP port to hold on 127.0.0.1")
	return nil, ""
}

// nginxWorkers is worker_processes in the test's configuration.
const nginxWorkers = 2

// nginxConf is the test's nginx configuration: docs/deploy.md shows it and
// explains each choice. module is the stream module's .so, dir the prefix
// (pid and log), listen the address nginx takes (UDP and TCP), backends
// the servers' addresses.
func nginxConf(module, dir, listen string, backends []string) string {
	var servers strings.Builder
	for _, b := range backends {
		fmt.Fprintf(&servers, "        server %s max_fails=0;\n", b)
	}
	return fmt.Sprintf(`load_module %[1]s;
daemon off;
master_process on;
worker_processes %[5]d;
worker_rlimit_nofile 16384;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log notice;
error_log stderr notice;

events {
    worker_connections 4096;
}

stream {
    # MCP-Flow: QUIC on UDP. A flow (client address and port) keeps its
    # server; the hash of a new flow (a redial) picks any server.
    # max_fails=0: a server restarting on its address is never marked
    # down (by default one refused datagram or connection marks it down
    # for 10 s, and three restarts within 10 s leave no live server).
    upstream mcp_flow_udp {
        hash $remote_addr$remote_port consistent;
%[4]s    }
    server {
        listen %[3]s udp reuseport;
        proxy_pass mcp_flow_udp;
        # No proxy_responses: a QUIC connection is no request/response
        # exchange. Forget a flow only after QUIC itself would have: past
        # the idle timeout (8 s, with keep-alives every 2 s).
        proxy_timeout 30s;
    }

    # Streamable HTTP (and the fallback of spec §10.2): TLS over TCP,
    # passed through; one TCP connection keeps its server.
    upstream mcp_flow_tcp {
        hash $remote_addr$remote_port consistent;
%[4]s    }
    server {
        listen %[3]s;
        proxy_pass mcp_flow_tcp;
        proxy_connect_timeout 2s;
        proxy_timeout 10m;
    }
}
`, module, dir, listen, servers.String(), nginxWorkers)
}

// startNginx runs nginx in the foreground (daemon off, master and workers
// in the test's process group) with conf, its prefix, pid and logs in dir,
// and waits until its workers have started: the listening sockets are
// bound by then (the master binds them before it forks).
func startNginx(t *testing.T, bin, dir, conf string) *proc {
	t.Helper()
	path := filepath.Join(dir, "nginx.conf")
	if os.Getenv(logDirEnv) != "" {
		// Every flow's start and end, for debugging.
		conf = strings.Replace(conf, "/error.log notice;", "/error.log info;", 1)
	}
	if os.Geteuid() == 0 {
		// As root, nginx's workers would run as nobody, whose group's
		// name differs between systems; this nginx is the test's alone.
		conf = "user root;\n" + conf
	}
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, nginxWorkers)
	cmd := exec.Command(bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"))
	p := start(t, "nginx", cmd, func(line string) {
		if strings.Contains(line, "start worker process ") {
			select {
			case started <- struct{}{}:
			default: // a worker started again later: nobody waits
			}
		}
	})
	deadline := time.After(startBound)
	for range nginxWorkers {
		select {
		case <-started:
		case <-p.exited:
			t.Fatalf("nginx exited (%v); stderr:\n%s\nconfiguration:\n%s", p.err, p.stderr, conf)
		case <-deadline:
			t.Fatalf("nginx started no workers in %v; stderr:\n%s", startBound, p.stderr)
		}
	}
	return p
}

// startHTTPFront runs `mcp-flow bridge http` on a free loopback port,
// pointed at target, and returns its endpoint.
func startHTTPFront(t *testing.T, cli, hash, target string) (*proc, string) {
	t.Helper()
	announced := make(chan string, 1)
	// -drain 10s, as the servers': exitBound covers it.
	cmd := exec.Command(cli, append(append([]string{"-cert-hash", hash}, debugFlag()...), "bridge", "http", "-listen", "127.0.0.1:0", "-drain", "10s", target)...)
	p := start(t, "mcp-flow bridge http", cmd, func(line string) {
		if _, rest, ok := strings.Cut(line, "endpoint http://"); ok {
			select {
			case announced <- "http://" + strings.Fields(rest)[0]:
			default:
			}
		}
	})
	select {
	case e := <-announced:
		return p, e
	case <-p.exited:
		t.Fatalf("mcp-flow bridge http exited (%v); stderr:\n%s", p.err, p.stderr)
	case <-time.After(startBound):
		t.Fatalf("mcp-flow bridge http announced no endpoint in %v; stderr:\n%s", startBound, p.stderr)
	}
	return nil, ""
}
