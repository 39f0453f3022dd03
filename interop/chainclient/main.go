// Command chainclient puts MCP-Flow between an MCP client under test and the
// server it is pointed at, for the official conformance suite's client mode:
//
//	chainclient <server-url>
//
// runs $CHAIN_CLIENT (the go-sdk's conformance client) against a Streamable
// HTTP front → MCP-Flow → Streamable HTTP upstream → <server-url>, with the
// suite's environment passed through, and exits with the client's status.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/mcp-flow/mcp-flow/bridge"
	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

func main() {
	if len(os.Args) != 2 || os.Getenv("CHAIN_CLIENT") == "" {
		fmt.Fprintln(os.Stderr, "usage: CHAIN_CLIENT=client chainclient <server-url>")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	switch d := os.Getenv("MCP_FLOW_DEBUG"); d {
	case "", "0":
	case "1":
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	default: // a file to append the debug log to
		f, err := os.OpenFile(d, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fatal(err)
		}
		log = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cert, err := certs.GenerateDev(certs.DevOptions{})
	if err != nil {
		fatal(err)
	}
	cfg := flow.ServerConfig{Addr: "127.0.0.1:0", TLSConfig: certs.ServerTLSConfig(cert), Logger: log}
	upCfg := bridge.HTTPUpstreamConfig{Endpoint: os.Args[1], Logger: log}
	if strings.HasPrefix(os.Getenv("MCP_CONFORMANCE_SCENARIO"), "auth/") {
		// The bridge is the MCP client of the upstream, so it is the one
		// that authorizes (with the go-sdk's OAuth handler, configured as the
		// go-sdk's conformance client configures its own).
		if upCfg.OAuth, err = oauthHandler(); err != nil {
			fatal(err)
		}
	}
	bridge.NewHTTPUpstream(upCfg).Configure(&cfg)
	srv, err := flow.NewServer(cfg)
	if err != nil {
		fatal(err)
	}
	if err := srv.Listen(); err != nil {
		fatal(err)
	}
	go srv.Serve()
	tlsConf, _ := certs.ClientTLSConfig(certs.ClientOptions{PinnedHashes: [][32]byte{cert.Hash()}})
	front := bridge.NewHTTPFront(bridge.HTTPConfig{Stdio: bridge.StdioConfig{URL: srv.URL(), Logger: log,
		Client: flow.ClientConfig{TLSConfig: tlsConf, Logger: log}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal(err)
	}
	go http.Serve(ln, front)
	cmd := exec.CommandContext(context.Background(), os.Getenv("CHAIN_CLIENT"), "http://"+ln.Addr().String()+"/mcp")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// The suite kills the shell it started us with when a scenario times
	// out; the client must not outlive us and hold the suite's pipes open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Run()
	srv.Close()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fatal(err)
	}
}

// oauthHandler is the authorization-code handler of the conformance suite's
// auth scenarios: its authorization server redirects at once, so the code
// is read off the redirect; a pre-registered client comes in
// MCP_CONFORMANCE_CONTEXT.
func oauthHandler() (auth.OAuthHandler, error) {
	const redirect = "http://localhost:3000/callback"
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
			if err != nil {
				return nil, err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			loc, err := url.Parse(resp.Header.Get("Location"))
			if err != nil {
				return nil, err
			}
			q := loc.Query()
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: "https://conformance-test.local/client-metadata.json"},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{redirect}},
		},
	}
	var cc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &cc) == nil && cc.ClientID != "" && cc.ClientSecret != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: cc.ClientID,
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: cc.ClientSecret}}
	}
	return auth.NewAuthorizationCodeHandler(cfg)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "chainclient:", err)
	os.Exit(1)
}
