// Command mcp-flow-conformance judges MCP-Flow peers against docs/spec.md.
//
// Server mode: it acts as the client of the server at -url.
//
//	mcp-flow-conformance -url https://127.0.0.1:4433/mcp-flow -cert-hash HEX
//
// It speaks the current WebTransport, or draft-02 to a server that needs it
// (-webtransport).
//
// Client mode: it serves each scenario and runs the client command against
// it as `CMD... call scenario`, with MCP_FLOW_URL and MCP_FLOW_CERT_HASH in
// the environment (see package conformance for the contract).
//
//	mcp-flow-conformance -client 'mcp-flow'
//
// It prints each check on stderr as it finishes, then the report on stdout: a
// table (or JSON, or JUnit XML with -format). It exits 1 when a MUST check
// fails (checks listed in -baseline excepted), 2 on usage errors.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/conformance"
	"github.com/mcp-flow/mcp-flow/internal/qlogdir"
)

func main() {
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	qlogdir.Wait(qlogdir.ExitBound) // the judge's connections, with $QLOGDIR set
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp-flow-conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "URL of the MCP-Flow server under test (server mode)")
	client := fs.String("client", "", "command of the MCP-Flow client under test, split at spaces (client mode)")
	hash := fs.String("cert-hash", "", "pin the server certificate's SHA-256 (hex or base64)")
	ca := fs.String("ca", "", "PEM file of CA certificates")
	insecure := fs.Bool("insecure", false, "accept any server certificate (development only)")
	format := fs.String("format", "table", "output: table, json or junit")
	out := fs.String("o", "", "write the report to this file instead of stdout")
	baseline := fs.String("baseline", "", "file of check ids expected to fail, one a line")
	only := fs.String("only", "", "comma-separated check ids to run")
	timeout := fs.Duration("timeout", 10*time.Second, "time limit of each check")
	finWait := fs.Duration("fin-wait", conformance.DefaultFINWait, "client mode: how long the judge waits after $/shutdown for the client's FIN before it closes the session (a client without one costs each check this long)")
	list := fs.Bool("list", false, "list the checks and exit")
	dialect := fs.String("webtransport", "auto", "WebTransport version of the server: current, draft02 (as the v0.1 examples serve), or auto (current, else draft02 when the server needs it)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *list {
		for _, c := range append(conformance.ServerChecks(), conformance.ClientChecks()...) {
			fmt.Fprintf(stdout, "%-30s %-6s %-7s §%-8s %s\n", c.ID, c.Level, c.Source, c.Section, c.Title)
		}
		return 0
	}
	if (*url == "") == (*client == "") {
		fmt.Fprintln(stderr, "mcp-flow-conformance: give -url (server mode) or -client (client mode)")
		fs.Usage()
		return 2
	}
	d, err := conformance.ParseDialect(*dialect)
	if err != nil {
		fmt.Fprintln(stderr, "mcp-flow-conformance: -webtransport:", err)
		return 2
	}
	opts := certs.ClientOptions{Insecure: *insecure}
	if *hash != "" {
		h, err := certs.ParseHash(*hash)
		if err != nil {
			fmt.Fprintln(stderr, "mcp-flow-conformance: -cert-hash:", err)
			return 2
		}
		opts.PinnedHashes = [][32]byte{h}
	}
	if *ca != "" {
		pool, err := certs.LoadCAFile(*ca)
		if err != nil {
			fmt.Fprintln(stderr, "mcp-flow-conformance: -ca:", err)
			return 2
		}
		opts.RootCAs = pool
	}
	tlsConf, err := certs.ClientTLSConfig(opts)
	if err != nil {
		fmt.Fprintln(stderr, "mcp-flow-conformance:", err)
		return 2
	}
	o := conformance.Options{CheckTimeout: *timeout, FINWait: *finWait, OnResult: func(r conformance.Result) {
		fmt.Fprintf(stderr, "%-5s %-6s %-7s %-28s %s\n", strings.ToUpper(string(r.Status)), r.Level, r.Source, r.ID, r.Seen)
	}}
	if *baseline != "" {
		if o.Expected, err = conformance.LoadBaseline(*baseline); err != nil {
			fmt.Fprintln(stderr, "mcp-flow-conformance: -baseline:", err)
			return 2
		}
	}
	if *only != "" {
		o.Only = map[string]bool{}
		for _, id := range strings.Split(*only, ",") {
			o.Only[strings.TrimSpace(id)] = true
		}
	}
	var rs []conformance.Result
	if *client != "" {
		cert, err := certs.GenerateDev(certs.DevOptions{})
		if err != nil {
			fmt.Fprintln(stderr, "mcp-flow-conformance:", err)
			return 2
		}
		if o.CheckTimeout == 10*time.Second {
			o.CheckTimeout = 30 * time.Second // a client is a process to start
		}
		rs = conformance.RunClient(context.Background(), conformance.ClientTarget{
			Command: strings.Fields(*client), TLS: certs.ServerTLSConfig(cert), CertHash: cert.HashHex()}, o)
	} else {
		rs = conformance.RunServer(context.Background(), conformance.Target{URL: *url, TLS: tlsConf, Dialect: d}, conformance.ServerChecks(), o)
	}
	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(stderr, "mcp-flow-conformance:", err)
			return 2
		}
		defer f.Close()
		w = f
	}
	switch *format {
	case "json":
		err = conformance.WriteJSON(w, rs)
	case "junit":
		err = conformance.WriteJUnit(w, *url+*client, rs)
	default:
		err = conformance.WriteTable(w, rs)
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcp-flow-conformance:", err)
		return 2
	}
	if conformance.Failed(rs) {
		return 1
	}
	return 0
}
