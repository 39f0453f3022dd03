package main

import (
	"context"
	"net/url"

	"github.com/mcp-flow/mcp-flow/bearer"
)

// tokenSource is -token-file as a flow.ClientConfig.Token (and, through
// fallback, the Streamable HTTP side's): the file is read on every dial, so
// a token renewed on disk is picked up by the next connection (docs/spec.md
// §9.1). nil without -token-file. The bridge subcommands take the same
// flag: they set their StdioConfig.Client.Token from it.
func (o options) tokenSource() func(context.Context) (string, error) {
	if o.tokenFile == "" {
		return nil
	}
	return bearer.FileSource(o.tokenFile)
}

// shownURL is u as the CLI prints it: an access_token in its query
// (a browser-style URL) is redacted (spec §9.1).
func shownURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(an unreadable URL)"
	}
	return bearer.Redact(p)
}
