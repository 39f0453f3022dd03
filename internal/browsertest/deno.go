package browsertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

var denoMu sync.Mutex

// Deno returns the path of a Deno binary ($DENO, or the one npm's deno
// package ships in its per-platform package under internal/browsertest/deno,
// at the version pinned by that folder's package-lock.json), running `npm
// ci` there when it is missing. Under CI=true a missing Deno fails the test
// (Need); elsewhere the test is skipped.
//
// Deno is a server-side JavaScript host with the W3C WebTransport API
// (draft-ietf-webtrans-http3 over its own QUIC stack, quinn), behind a flag:
// run a script as
//
//	deno run --unstable-net --no-prompt --allow-net=127.0.0.1 [--allow-read=DIR] [--allow-env] script.mjs
//
// with DENO_NO_UPDATE_CHECK=1 and, so that nothing is left behind, DENO_DIR
// set to a temporary folder. To trust the server's development certificate
// the script passes its SHA-256 to the constructor, as a page does: new
// WebTransport(url, {serverCertificateHashes: [{algorithm: "sha-256",
// value: bytes}]}) (W3C WebTransport §4.3, spec §9: ECDSA, validity under
// 14 days), which Deno honours (without it the handshake fails with
// "invalid peer certificate: UnknownIssuer"). Two flags do the same for
// the whole process, checked with Deno 2.9.6: --cert FILE (the server's
// PEM certificate, taken as a root) and
// --unsafely-ignore-certificate-errors=127.0.0.1 (trusts any; not what a
// test of certificate pinning wants). Without --unstable-net, WebTransport
// is not defined. Deno sends no request headers on the CONNECT (it has no
// headers option), and its `closed` follows the QUIC
// connection only: it reads no CLOSE_WEBTRANSPORT_SESSION capsule (spec
// §7.2), and its close() sends a CONNECTION_CLOSE.
func Deno(t testing.TB) string {
	t.Helper()
	bin, err := DenoPath(t.Logf)
	if err != nil {
		Need(t, "deno", err)
	}
	return bin
}

// DenoPath is Deno for code that is no test (a benchmark's set-up, which
// reports a missing Deno its own way): the binary's path, or why there is
// none; logf tells of an npm install.
func DenoPath(logf func(string, ...any)) (string, error) {
	if p := os.Getenv("DENO"); p != "" {
		return p, nil
	}
	denoMu.Lock()
	defer denoMu.Unlock()
	root, err := ModuleDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "internal", "browsertest", "deno")
	target := map[string]string{"amd64": "linux-x64-glibc", "arm64": "linux-arm64-glibc"}[runtime.GOARCH]
	if runtime.GOOS != "linux" || target == "" {
		return "", os.ErrNotExist // npm's deno also has darwin and windows builds; add them here when needed
	}
	bin := filepath.Join(dir, "node_modules", "@deno", target, "deno")
	if err := InstallNPM(logf, dir, []string{bin}, "ci", "--no-audit", "--no-fund", "--ignore-scripts"); err != nil {
		return "", err
	}
	return bin, nil
}

// DriveDeno runs `deno run --unstable-net flags... script args...` in dir,
// allowed to reach 127.0.0.1, read dir and the environment (npm packages
// read process.env), with a DENO_DIR of the test's own (flags may add, for
// instance, --location=URL for a page's script that reads location), and
// decodes the one JSON
// line the script prints into v. The script is killed after timeout (a
// bound on a hang: Deno's `closed` may never settle); a failure quotes its
// whole stderr.
func DriveDeno(t testing.TB, dir, deno string, flags []string, script string, timeout time.Duration, v any, args ...string) {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := append([]string{"run", "--unstable-net", "--no-prompt", "--allow-net=127.0.0.1",
		"--allow-read=" + abs, "--allow-env"}, flags...)
	argv = append(append(argv, script), args...)
	cmd := exec.CommandContext(ctx, deno, argv...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DENO_NO_UPDATE_CHECK=1", "DENO_DIR="+t.TempDir(), "NO_COLOR=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("deno %s (after %v): %v\nstdout:\n%s\nstderr:\n%s", script, time.Since(start).Round(time.Millisecond), err, out, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("deno %s output: %v\n%s\nstderr:\n%s", script, err, out, stderr.String())
	}
}

// DenoServer is a server script of js/ running in Deno (StartDenoServer).
type DenoServer struct {
	Port   int
	cmd    *exec.Cmd
	stderr *lockedBuffer
	dir    string
}

// StartDenoServer runs script (a path under jsDir, js/test/deno-sdk-server.mjs
// say) in Deno with the certificate and key given as PEM, allowed to reach
// 127.0.0.1, read the PEM files and the environment, and returns once its
// first line of stdout has announced {"port": N} (within 30 s). Stop ends
// it. For set-ups that are no test (a benchmark's, make interop's); js/'s
// npm packages are installed first when they are missing.
func StartDenoServer(logf func(string, ...any), jsDir, script string, certPEM, keyPEM []byte, args ...string) (*DenoServer, error) {
	deno, err := DenoPath(logf)
	if err != nil {
		return nil, fmt.Errorf("deno: %w", err)
	}
	if err := InstallNPM(logf, jsDir, []string{"node_modules/@modelcontextprotocol/server", "node_modules/zod", "node_modules/cbor-x"},
		"install", "--no-audit", "--no-fund", "--ignore-scripts"); err != nil {
		return nil, fmt.Errorf("npm install in %s: %w", jsDir, err)
	}
	dir, err := os.MkdirTemp("", "deno-server")
	if err != nil {
		return nil, err
	}
	s := &DenoServer{stderr: &lockedBuffer{}, dir: dir}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err == nil {
		err = os.WriteFile(keyFile, keyPEM, 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.cmd = exec.Command(deno, append([]string{"run", "--unstable-net", "--no-prompt", "--allow-net=127.0.0.1", "--allow-read=" + dir, "--allow-env",
		script, certFile, keyFile}, args...)...)
	s.cmd.Dir = jsDir
	s.cmd.Env = append(os.Environ(), "DENO_NO_UPDATE_CHECK=1", "DENO_DIR="+filepath.Join(dir, "deno"), "NO_COLOR=1")
	s.cmd.Stderr = s.stderr
	out, err := s.cmd.StdoutPipe()
	if err == nil {
		err = s.cmd.Start()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	kill := time.AfterFunc(30*time.Second, func() { s.cmd.Process.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	kill.Stop()
	var hello struct{ Port int }
	if err != nil || json.Unmarshal([]byte(line), &hello) != nil || hello.Port == 0 {
		s.Stop()
		return nil, fmt.Errorf("%s said %q (%v); stderr:\n%s", script, line, err, s.Stderr())
	}
	s.Port = hello.Port
	return s, nil
}

// PID is the server's process id.
func (s *DenoServer) PID() int { return s.cmd.Process.Pid }

// Stderr is what the server wrote on stderr so far.
func (s *DenoServer) Stderr() string { return s.stderr.String() }

// Stop kills the server, waits for it and removes its files.
func (s *DenoServer) Stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
	os.RemoveAll(s.dir)
}

// lockedBuffer is a bytes.Buffer safe for a process's writes and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }
