// Package demotools holds the tool set of mcp-flow-server, the demo and
// test server; they exercise every feature of MCP-Flow: echo, a file reader that serves files as execution
// streams, a generator of deterministic bytes, a slow task with progress
// and cancellation, a stream that fails midway, a tool that asks the
// client for sampling, audio and log datagrams (tone, log), and who the
// caller's access token says it is (whoami, docs/spec.md §9.1). Tests, the
// conformance runner and the benchmarks run the same tools in process.
package demotools

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/tools"
)

// Config configures the tools.
type Config struct {
	// Root is the directory read_file serves; empty disables read_file.
	Root string
	// MaxFileSize bounds the size of a file read_file serves; a larger one
	// is refused (spec §8, §9). 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// TallyFile, when set (else $MCP_FLOW_TEST_TALLY, TallyEnv), adds the
	// test tool tally, which appends each call's key to this file (tally.go).
	TallyFile string
}

// DefaultMaxFileSize is the default bound on a file read_file serves: 1 GiB.
const DefaultMaxFileSize = 1 << 30

// New returns the tools.
func New(cfg Config) []tools.Tool {
	ts := []tools.Tool{
		{
			Name:        "echo",
			Description: "Returns its text argument as text content.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
			Func:        echo,
		},
		{
			Name:        "generate",
			Description: "Streams N deterministic bytes (see demotools.Generate) on an execution stream (or several); with sha256 set, also reports their SHA-256. With a progressToken, their size comes first as progress in bytes.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"bytes":{"type":"integer","minimum":0},"sha256":{"type":"boolean"},"streams":{"type":"integer","minimum":1,"maximum":256}},"required":["bytes"]}`),
			Func:        generate,
		},
		{
			Name:        "slow",
			Description: "Works for steps × delayMs, reporting progress after each step; honours cancellation.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"steps":{"type":"integer","minimum":1},"delayMs":{"type":"integer","minimum":0}}}`),
			Func:        slow,
		},
		{
			Name:        "progress_burst",
			Description: "Sends count progress updates as fast as it can, then returns count (for measuring datagram delivery).",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer","minimum":1}},"required":["count"]}`),
			Func:        progressBurst,
		},
		{
			Name:        "fail_midstream",
			Description: "Streams N bytes, then fails the stream: the client must see a stream error, never a complete payload.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"bytes":{"type":"integer","minimum":0}}}`),
			Func:        failMidstream,
		},
		{
			Name:        "tone",
			Description: "Sends ms of a sine wave of hz as audio datagrams, paced in real time: PCM s16le mono at sampleRate, 20 ms (at most 640 bytes) per datagram, payload {seq, data}; returns the format {format, channels, sampleRate, chunks, bytes, ms}. Needs datagrams.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":1,"maximum":10000},"hz":{"type":"number","exclusiveMinimum":0},"sampleRate":{"type":"integer","minimum":8000,"maximum":48000}}}`),
			Func:        tone,
		},
		{
			Name:        "log",
			Description: "Sends count MCP log messages (notifications/message, logger mcp-flow-server) at level: log datagrams when the session has them, else on the control stream.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"level":{"type":"string","enum":["debug","info","notice","warning","error","critical","alert","emergency"]},"message":{"type":"string"},"count":{"type":"integer","minimum":1,"maximum":1000}}}`),
			Func:        logTool,
		},
		{
			Name:        "ask_sampling",
			Description: "Asks the client for sampling/createMessage with the prompt and returns the client's answer.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}`),
			Func:        askSampling,
		},
	}
	ts = append(ts, whoamiTool())
	ts = append(ts, toggleTools()...)
	if cfg.Root != "" {
		root, limit := cfg.Root, cfg.MaxFileSize
		if limit <= 0 {
			limit = DefaultMaxFileSize
		}
		ts = append(ts, tools.Tool{
			Name:        "read_file",
			Description: fmt.Sprintf("Streams a regular file of at most %d bytes under the server's root directory on an execution stream (a test tool).", limit),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			Func: func(ctx context.Context, req *flow.Request, args json.RawMessage) (*tools.Result, error) {
				return readFile(root, limit, req, args)
			},
		})
	}
	if f := cfg.tallyFile(); f != "" {
		ts = append(ts, tallyTool(f))
	}
	return ts
}

func bad(msg string) error { return jsonrpc.NewError(jsonrpc.CodeInvalidParams, msg) }

func echo(_ context.Context, _ *flow.Request, args json.RawMessage) (*tools.Result, error) {
	var a struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(args, &a) != nil || a.Text == nil {
		return nil, bad("echo needs {text: string}")
	}
	return &tools.Result{Content: []any{tools.NewText(*a.Text)}}, nil
}

// Generate returns a reader of the n deterministic bytes that the generate
// tool streams (spec §5.5): 64 KiB blocks of a fixed pseudo-random pattern,
// each block stamped with its index in its first 8 bytes.
func Generate(n int64) io.Reader { return &generator{left: n} }

const genBlock = 64 << 10

var genPattern = func() []byte {
	b := make([]byte, genBlock)
	x := uint64(0x9E3779B97F4A7C15)
	for i := 0; i < len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	return b
}()

type generator struct {
	off, left int64
}

func (g *generator) Read(p []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && g.left > 0 {
		blk, in := g.off/genBlock, g.off%genBlock
		var stamp [8]byte
		binary.BigEndian.PutUint64(stamp[:], uint64(blk))
		chunk := int64(len(p) - n)
		chunk = min(chunk, genBlock-in, g.left)
		c := copy(p[n:n+int(chunk)], genPattern[in:in+chunk])
		for i := in; i < 8 && i < in+chunk; i++ {
			p[n+int(i-in)] = stamp[i]
		}
		n += c
		g.off += int64(c)
		g.left -= int64(c)
	}
	return n, nil
}

// GenerateSHA256 returns the SHA-256 of Generate(n), hex-encoded.
func GenerateSHA256(n int64) string {
	h := sha256.New()
	_, _ = io.Copy(h, Generate(n))
	return hex.EncodeToString(h.Sum(nil))
}

func generate(_ context.Context, req *flow.Request, args json.RawMessage) (*tools.Result, error) {
	var a struct {
		Bytes   int64 `json:"bytes"`
		SHA256  bool  `json:"sha256"`
		Streams int   `json:"streams"`
	}
	if json.Unmarshal(args, &a) != nil || a.Bytes < 0 {
		return nil, bad("generate needs {bytes: integer ≥ 0}")
	}
	if a.Streams < 1 {
		a.Streams = 1
	}
	if a.Streams > 256 {
		return nil, bad("generate: at most 256 streams")
	}
	res := &tools.Result{}
	for range a.Streams {
		ref, err := req.StreamFrom(Generate(a.Bytes), "application/octet-stream")
		if err != nil {
			return nil, err
		}
		res.Content = append(res.Content, ref)
	}
	// The streams' size, for a client's ETA (spec §6.3); a progress
	// notice, so its failure is no failure of the call.
	_ = req.ProgressBytes(0, a.Bytes*int64(a.Streams))
	info := map[string]any{"bytes": a.Bytes, "streams": a.Streams}
	if a.SHA256 {
		info["sha256"] = GenerateSHA256(a.Bytes)
	}
	res.StructuredContent = info
	b, _ := json.Marshal(info)
	res.Content = append(res.Content, tools.NewText(string(b)))
	return res, nil
}

func slow(ctx context.Context, req *flow.Request, args json.RawMessage) (*tools.Result, error) {
	a := struct {
		Steps   int `json:"steps"`
		DelayMs int `json:"delayMs"`
	}{Steps: 10, DelayMs: 100}
	if json.Unmarshal(args, &a) != nil || a.Steps < 1 || a.DelayMs < 0 {
		return nil, bad("slow needs {steps ≥ 1, delayMs ≥ 0}")
	}
	t := time.NewTicker(time.Duration(max(a.DelayMs, 1)) * time.Millisecond)
	defer t.Stop()
	for i := 1; i <= a.Steps; i++ {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-t.C:
		}
		if err := req.Progress(float64(i), float64(a.Steps), fmt.Sprintf("step %d of %d", i, a.Steps)); err != nil {
			return nil, err
		}
	}
	return &tools.Result{Content: []any{tools.NewText(fmt.Sprintf("done after %d steps", a.Steps))}}, nil
}

func progressBurst(_ context.Context, req *flow.Request, args json.RawMessage) (*tools.Result, error) {
	var a struct {
		Count int `json:"count"`
	}
	if json.Unmarshal(args, &a) != nil || a.Count < 1 {
		return nil, bad("progress_burst needs {count ≥ 1}")
	}
	for i := 1; i <= a.Count; i++ {
		if err := req.Progress(float64(i), float64(a.Count), ""); err != nil {
			return nil, err
		}
	}
	return &tools.Result{Content: []any{tools.NewText(fmt.Sprint(a.Count))}}, nil
}

// ErrMidstream is the failure fail_midstream injects.
var ErrMidstream = errors.New("injected failure after the promised bytes")

func failMidstream(_ context.Context, req *flow.Request, args json.RawMessage) (*tools.Result, error) {
	a := struct {
		Bytes int64 `json:"bytes"`
	}{Bytes: 1 << 20}
	if json.Unmarshal(args, &a) != nil || a.Bytes < 0 {
		return nil, bad("fail_midstream needs {bytes ≥ 0}")
	}
	ref, err := req.StreamFrom(io.MultiReader(Generate(a.Bytes), failingReader{}), "application/octet-stream")
	if err != nil {
		return nil, err
	}
	_ = req.ProgressBytes(0, a.Bytes) // what comes before the failure (spec §6.3)
	return &tools.Result{Content: []any{ref}}, nil
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, ErrMidstream }

func askSampling(ctx context.Context, req *flow.Request, args json.RawMessage) (*tools.Result, error) {
	var a struct {
		Prompt string `json:"prompt"`
	}
	if json.Unmarshal(args, &a) != nil {
		return nil, bad("ask_sampling needs {prompt: string}")
	}
	params := map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": a.Prompt}}},
		"maxTokens": 100,
	}
	resp, err := req.Session.Call(ctx, "sampling/createMessage", params)
	if err != nil {
		// A tool error (isError), not a protocol error: the request itself was fine.
		return nil, fmt.Errorf("the client refused sampling: %v", err)
	}
	var r struct {
		Content struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(resp.Result, &r)
	return &tools.Result{Content: []any{tools.NewText(r.Content.Text)}, StructuredContent: json.RawMessage(resp.Result)}, nil
}

// readFile serves a file under root, for tests and demonstrations: it is
// no file server (spec §9). The path is resolved with os.Root, so that no
// path (.., absolute, or a symlink) can escape root; a symlink inside root
// is followed. Only a regular file of at most limit bytes is served,
// checked on the opened file itself (fstat), so nothing can be swapped in
// between a check and the open. The open never blocks: O_NONBLOCK makes a
// FIFO open at once (and then be refused) instead of holding an OS thread
// until a writer comes, which is how 1,000 calls once exhausted the
// runtime's 10,000 threads. The stream carries the size found at the open
// and no more, even if the file grows.
func readFile(root string, limit int64, req *flow.Request, args json.RawMessage) (*tools.Result, error) {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(args, &a) != nil || a.Path == "" {
		return nil, bad("read_file needs {path: string}")
	}
	f, size, err := openRegular(root, a.Path, limit)
	if err != nil {
		return nil, err
	}
	mt := mime.TypeByExtension(filepath.Ext(a.Path))
	if mt == "" {
		mt = "application/octet-stream"
	}
	ref, err := req.StreamFrom(&closingReader{f: f, r: io.LimitReader(f, size)}, mt)
	if err != nil {
		f.Close()
		return nil, err
	}
	_ = req.ProgressBytes(0, size) // spec §6.3
	return &tools.Result{Content: []any{ref, tools.NewText(fmt.Sprintf("%s: %d bytes", a.Path, size))}}, nil
}

// openRegular opens path under root, without blocking, and returns it if it
// is a regular file of at most limit bytes. Its errors are tool errors, for
// the model to read.
func openRegular(root, path string, limit int64) (*os.File, int64, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	f, err := r.OpenFile(filepath.Clean(path), os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("read_file: %s: %w", path, errors.Unwrap(err))
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("read_file: %s: %w", path, err)
	case !st.Mode().IsRegular():
		err = fmt.Errorf("read_file: %s is not a regular file but %s", path, kindOf(st.Mode()))
	case st.Size() > limit:
		err = fmt.Errorf("read_file: %s is %d bytes, over the limit of %d", path, st.Size(), limit)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

func kindOf(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "of type " + m.Type().String()
}

// closingReader reads r and closes f at EOF or error.
type closingReader struct {
	f *os.File
	r io.Reader
}

func (c *closingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil {
		c.f.Close()
	}
	return n, err
}
