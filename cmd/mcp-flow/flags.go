package main

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcp-flow/mcp-flow/certs"
	"github.com/mcp-flow/mcp-flow/codec"
)

func encodings(list string) []codec.Name {
	var encs []codec.Name
	for _, e := range strings.Split(list, ",") {
		if e = strings.TrimSpace(e); e != "" {
			encs = append(encs, codec.Name(e))
		}
	}
	return encs
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// helpOrUsage is the exit code after a failed flag parse: 0 for -h (the
// usage was asked for and printed), else 2.
func helpOrUsage(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// parseInterleaved parses args with fs, flags and positional arguments in
// any order, and returns the positional ones: mcp-flow call TOOL -json
// k=v. "--" ends the flags; what follows it is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func usage(w io.Writer, msg string) int {
	fmt.Fprintf(w, "mcp-flow: %s\n%s\n", msg, usageSummary)
	return exitUsage
}

func clientTLS(o options) (*tls.Config, error) {
	opts := certs.ClientOptions{Insecure: o.insecure}
	if o.certHash != "" {
		h, err := certs.ParseHash(o.certHash)
		if err != nil {
			return nil, fmt.Errorf("-cert-hash: %w", err)
		}
		opts.PinnedHashes = [][32]byte{h}
	}
	if o.caFile != "" {
		pool, err := certs.LoadCAFile(o.caFile)
		if err != nil {
			return nil, fmt.Errorf("-ca: %w", err)
		}
		opts.RootCAs = pool
	}
	return certs.ClientTLSConfig(opts)
}

// toolArgs turns the command line's arguments into a JSON object: one JSON
// object as is, or key=value pairs (values that parse as JSON are taken as
// JSON, others as strings).
func toolArgs(a []string) (json.RawMessage, error) {
	if len(a) == 1 && strings.HasPrefix(strings.TrimSpace(a[0]), "{") {
		if !json.Valid([]byte(a[0])) {
			return nil, errors.New("arguments are not valid JSON")
		}
		return json.RawMessage(a[0]), nil
	}
	m := map[string]json.RawMessage{}
	for _, kv := range a {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q is neither a JSON object nor key=value", kv)
		}
		if json.Valid([]byte(v)) {
			m[k] = json.RawMessage(v)
		} else {
			b, _ := json.Marshal(v)
			m[k] = b
		}
	}
	return json.Marshal(m)
}
