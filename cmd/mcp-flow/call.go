package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mcp-flow/mcp-flow/fallback"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// listTools prints each tool with its arguments (name, type, required) from
// its inputSchema, or with -json the tools/list result alone.
func listTools(ctx context.Context, c *fallback.Client, o options, t *term, stdout io.Writer) int {
	r, err := c.Call(ctx, "tools/list", nil, nil)
	if err != nil {
		return failure(ctx, t, o, err, "waiting for tools/list")
	}
	if o.raw {
		fmt.Fprintf(stdout, "%s\n", r.Result)
		return exitOK
	}
	var l struct {
		Tools []struct {
			Name, Description string
			InputSchema       struct {
				Properties map[string]struct {
					Type        any    `json:"type"`
					Description string `json:"description"`
				} `json:"properties"`
				Required []string `json:"required"`
			} `json:"inputSchema"`
		}
	}
	if err := json.Unmarshal(r.Result, &l); err != nil {
		t.say("mcp-flow: tools/list result: %v", err)
		return exitRemote
	}
	for _, tool := range l.Tools {
		fmt.Fprintf(stdout, "%s  %s\n", tool.Name, strings.TrimSpace(tool.Description))
		required := map[string]bool{}
		for _, r := range tool.InputSchema.Required {
			required[r] = true
		}
		names := make([]string, 0, len(tool.InputSchema.Properties))
		for n := range tool.InputSchema.Properties {
			names = append(names, n)
		}
		// Required arguments first, then by name.
		sort.Slice(names, func(i, j int) bool {
			if required[names[i]] != required[names[j]] {
				return required[names[i]]
			}
			return names[i] < names[j]
		})
		for _, n := range names {
			p := tool.InputSchema.Properties[n]
			typ := "any"
			switch v := p.Type.(type) {
			case string:
				typ = v
			case []any:
				var ts []string
				for _, x := range v {
					ts = append(ts, fmt.Sprint(x))
				}
				typ = strings.Join(ts, "|")
			}
			req := ""
			if required[n] {
				req = ", required"
			}
			line := fmt.Sprintf("    %s=%s%s", n, typ, req)
			if d := strings.TrimSpace(p.Description); d != "" {
				line += "  " + d
			}
			fmt.Fprintln(stdout, line)
		}
	}
	return exitOK
}

// callTool calls a tool and prints its result. Stdout carries the result
// alone, so that it can be piped: with execution streams (and no -out) the
// streams' raw bytes and nothing else, the other content going to stderr;
// without streams, the text content; with -json, the JSON result alone.
// The transfer meter knows the streams' size when the server told it as
// progress in bytes (spec §6.3), and then shows an ETA. Over the
// Streamable HTTP fallback, a stream arrives as the server's front made it
// (an inline blob, or a download the CLI fetches): the CLI writes its bytes
// as it writes a stream's (fallback.Response.Payload).
func callTool(ctx context.Context, c *fallback.Client, name string, args json.RawMessage, o options, t *term, stdout io.Writer) int {
	var streamSize atomic.Int64 // 0: not told
	onProgress := func(p flow.Progress) {
		if p.Bytes() {
			streamSize.Store(int64(p.Total))
			return
		}
		t.draw(progressLine(p))
	}
	r, err := c.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": args}, onProgress)
	t.clear()
	if err != nil {
		return failure(ctx, t, o, err, "waiting for the result of "+name)
	}
	defer r.Close()
	var res struct {
		Content           []json.RawMessage `json:"content"`
		IsError           bool              `json:"isError"`
		StructuredContent struct {
			Chunks int `json:"chunks"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.say("mcp-flow: tools/call result: %v", err)
		return exitRemote
	}
	if o.audio != nil && res.StructuredContent.Chunks > 0 {
		// The result tells how many audio chunks were sent (tone does:
		// spec §6.4); those that trail it get a moment to come.
		o.audio.await(res.StructuredContent.Chunks)
	}
	// The content blocks that carry a stream's bytes.
	streams := 0
	for _, b := range res.Content {
		if tag, mt, ok := r.Carries(b); ok {
			streams++
			if o.out == "" && !o.raw && isTerminal(stdout) && !isText(mt) {
				// Binary bytes would garble the terminal; text may go there.
				t.say("mcp-flow: execution stream %d is %s, not text: not writing it to a terminal; pipe stdout (| sha256sum, > FILE) or use -out DIR", tag, mimeName(mt))
				return exitUsage
			}
		}
	}
	// Once the result is in, the request lives on in its streams: an
	// interrupt or -timeout cancels it with $/cancel (spec §7.1), which
	// resets them.
	stop := context.AfterFunc(ctx, func() { c.Cancel(r, context.Cause(ctx).Error()) })
	defer stop()
	// Where non-stream content goes: stdout unless stream bytes go there.
	text := func(line string) {
		t.mu.Lock()
		fmt.Fprintln(stdout, line)
		t.mu.Unlock()
	}
	if streams > 0 && o.out == "" && !o.raw {
		text = func(line string) { t.say("%s", line) }
	}
	if o.raw {
		fmt.Fprintf(stdout, "%s\n", r.Result)
	}
	// One meter for all the call's streams: the size the server told covers
	// them all. The progress that told it came before the result (spec §6.2).
	var m *meter
	if streams > 0 {
		m = newMeter(t, streamSize.Load())
		defer m.end()
	}
	code := exitOK
	for _, b := range res.Content {
		var block struct{ Type, Text string }
		_ = json.Unmarshal(b, &block)
		_, _, carries := r.Carries(b)
		switch {
		case carries:
			if c := copyStream(ctx, r, b, m, o, t, stdout); c != exitOK && code == exitOK {
				code = c
			}
		case o.raw:
		case block.Type == "text":
			text(block.Text)
		default:
			text(string(b))
		}
	}
	if res.IsError && code == exitOK {
		code = exitRemote
	}
	return code
}

// copyStream copies the execution stream a content block carries to
// stdout, to a new file under -out, or (with -json and no -out) only counts
// and hashes it, counting its bytes on the call's meter m.
func copyStream(ctx context.Context, r *fallback.Response, block json.RawMessage, m *meter, o options, t *term, stdout io.Writer) int {
	tag, _, _ := r.Carries(block)
	what := fmt.Sprintf("reading execution stream %d", tag)
	sr, err := r.Payload(ctx, block)
	if sr != nil {
		defer sr.Close()
	}
	var je *jsonrpc.Error
	if err != nil && ctx.Err() == nil && errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidStreamRef {
		// No stream within the wait (spec §5.3): a failed stream.
		t.say("mcp-flow: %s", je.Message)
		return exitStream
	}
	if err != nil {
		return failure(ctx, t, o, err, "waiting for execution stream "+fmt.Sprint(tag))
	}
	if o.out == "" {
		dst := stdout
		h := sha256.New()
		if o.raw {
			dst = h
		}
		n, err := io.Copy(m.counting(dst), sr)
		if err != nil {
			return failure(ctx, t, o, err, fmt.Sprintf("%s after %d bytes", what, n))
		}
		if o.raw {
			t.say("mcp-flow: execution stream %d: %d bytes (%s), sha256 %s; not printed with -json (-out DIR keeps it)", tag, n, sr.MimeType, hex.EncodeToString(h.Sum(nil)))
		}
		return exitOK
	}
	base := filepath.Join(o.out, fmt.Sprintf("stream-%s-%d", r.ID.Raw(), tag))
	f, err := os.CreateTemp(o.out, filepath.Base(base)+".part*")
	if err != nil {
		t.say("mcp-flow: %v", err)
		return exitUsage
	}
	defer func() {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	n, err := io.Copy(m.counting(f), sr)
	if err != nil {
		// Never leave a truncated payload under its final name.
		return failure(ctx, t, o, err, fmt.Sprintf("%s after %d bytes", what, n))
	}
	if err := f.Close(); err != nil {
		t.say("mcp-flow: %v", err)
		return exitUsage
	}
	name, err := publish(f.Name(), base)
	if err != nil {
		t.say("mcp-flow: %v", err)
		return exitUsage
	}
	f = nil
	t.say("mcp-flow: wrote %d bytes (%s) to %s", n, sr.MimeType, name)
	return exitOK
}

// isText reports whether a stream of this MIME type is text (text/*), which
// the CLI writes to a terminal.
func isText(mimeType string) bool {
	mt, _, err := mime.ParseMediaType(mimeType)
	return err == nil && strings.HasPrefix(mt, "text/")
}

// mimeName names a stream's MIME type in a message.
func mimeName(mimeType string) string {
	if mimeType == "" {
		return "of no MIME type"
	}
	return strconv.Quote(mimeType)
}

// publish gives the finished file tmp the name base, or base.1, base.2 …
// when an earlier call's file holds it: a link never replaces a file, so
// -out never overwrites.
func publish(tmp, base string) (string, error) {
	for i := 0; ; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s.%d", base, i)
		}
		err := os.Link(tmp, name)
		if err == nil {
			return name, os.Remove(tmp)
		}
		if !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
}
