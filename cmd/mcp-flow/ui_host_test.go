package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveUIHandler serves uiHandler on a real listener at addr (port 0) and
// returns the listener's port; the server closes with the test.
func serveUIHandler(t *testing.T, addr string) (ip string, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: uiHandler(options{url: "https://127.0.0.1:4433/mcp-flow", certHash: "abcd", encoding: "cbor,json"}), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	a := ln.Addr().(*net.TCPAddr)
	return a.IP.String(), a.Port
}

// uiGet sends GET path to the inspector at ip:port with the Host header
// host and returns the response, its body read.
func uiGet(t *testing.T, ip string, port int, path, host string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+net.JoinHostPort(ip, strconv.Itoa(port))+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s Host %q: %v", path, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// checkFraming fails the test unless resp forbids framing both ways.
func checkFraming(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	if got := resp.Header.Get("Content-Security-Policy"); got != "frame-ancestors 'none'" {
		t.Errorf("%s: Content-Security-Policy %q, want frame-ancestors 'none'", what, got)
	}
	if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
		t.Errorf("%s: X-Frame-Options %q, want DENY", what, got)
	}
}

// TestUIHostCheck: the inspector on a loopback listener answers the
// loopback names and literals with the listener's port (or none), and
// refuses with 421 any other Host (DNS rebinding: a page on
// rebind.attacker.example whose name now resolves to 127.0.0.1 must not
// read config.json, the server's URL and certificate hash). Every response,
// refusals and 404s included, forbids framing (clickjacking of Call and
// Shutdown).
func TestUIHostCheck(t *testing.T) {
	t.Parallel()
	ip, port := serveUIHandler(t, "127.0.0.1:0")
	p := strconv.Itoa(port)
	allowed := []string{"127.0.0.1:" + p, "127.0.0.1", "localhost:" + p, "LocalHost", "127.5.6.7:" + p, "[::1]:" + p, "[::1]"}
	refused := []string{"evil.example", "rebind.attacker.example:" + p, "127.0.0.1:" + strconv.Itoa(port+1),
		"localhost.evil.example:" + p, "192.0.2.77:" + p, "[fd00::77]:" + p, "localhost:0"}
	for _, path := range []string{"/", "/config.json"} {
		for _, h := range allowed {
			what := fmt.Sprintf("GET %s Host %q", path, h)
			resp, body := uiGet(t, ip, port, path, h)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %d %q, want 200", what, resp.StatusCode, body)
			}
			checkFraming(t, what, resp)
		}
		for _, h := range refused {
			what := fmt.Sprintf("GET %s Host %q", path, h)
			resp, body := uiGet(t, ip, port, path, h)
			if resp.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("%s: %d, want 421", what, resp.StatusCode)
			}
			if strings.Contains(body, "abcd") || !strings.Contains(body, "Host") {
				t.Errorf("%s: body %q, want a short reason and no config", what, body)
			}
			checkFraming(t, what, resp)
		}
	}
	resp, _ := uiGet(t, ip, port, "/config.json", "127.0.0.1:"+p)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("config.json: Content-Type %q", ct)
	}
	resp, _ = uiGet(t, ip, port, "/no-such-file", "127.0.0.1:"+p)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a missing file: %d, want 404", resp.StatusCode)
	}
	checkFraming(t, "404", resp)

	// HTTP/1.0 may omit Host: refused all the same.
	c, err := net.Dial("tcp", net.JoinHostPort(ip, p))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /config.json HTTP/1.0\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("HTTP/1.0 without Host: %d, want 421", resp.StatusCode)
	}
	checkFraming(t, "no Host", resp)
}

// TestUIHostCheckNonLoopback: on a listener that is not loopback, the
// inspector answers its own address only: localhost and 127.0.0.1 then
// name something else. Tests bind loopback only, so the handler is called
// as net/http calls it for a connection to 192.0.2.7:7433.
func TestUIHostCheckNonLoopback(t *testing.T) {
	t.Parallel()
	const own, p = "192.0.2.7", "7433"
	h := uiHandler(options{url: "https://127.0.0.1:4433/mcp-flow"})
	for host, want := range map[string]int{
		own + ":" + p:       http.StatusOK,
		own:                 http.StatusOK,
		"localhost:" + p:    http.StatusMisdirectedRequest,
		"127.0.0.1:" + p:    http.StatusMisdirectedRequest,
		"[::1]:" + p:        http.StatusMisdirectedRequest,
		"evil.example:" + p: http.StatusMisdirectedRequest,
		own + ":9":          http.StatusMisdirectedRequest,
	} {
		req := httptest.NewRequest("GET", "http://"+host+"/config.json", nil)
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP(own), Port: 7433}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("Host %q on %s: %d %q, want %d", host, own, w.Code, w.Body, want)
		}
		checkFraming(t, "Host "+host, w.Result())
	}
}
