package bridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// StdioConfig configures a stdio front: an MCP host spawns the bridge as its
// stdio server, and the bridge reaches a remote MCP-Flow server.
type StdioConfig struct {
	// URL of the MCP-Flow server, and how to dial it. Info, Capabilities
	// and ProtocolVersion are taken from the host's initialize.
	URL    string
	Client flow.ClientConfig
	// InlineLimit is the largest execution stream inlined into a result
	// (as text, or as a base64 blob). A larger one is written to a file in
	// FileDir and named with a resource_link. Default 8 MiB: under the
	// 16 MiB line cap of the go-sdk's stdio client.
	InlineLimit int64
	// FileDir receives streams past InlineLimit. Default: os.TempDir().
	FileDir string
	Logger  *slog.Logger
}

// Stdio is one stdio front. Run it once.
type Stdio struct {
	cfg     StdioConfig
	log     *slog.Logger
	outMu   sync.Mutex
	out     io.Writer
	framing atomic.Int32
	emit    func(jsonrpc.Message) // when set, replaces writing to out (the HTTP front)

	mu       sync.Mutex
	sess     *flow.Session
	pending  map[string]context.CancelFunc // the host's requests in flight, by id
	hostWait waiters                       // the host's answers to requests forwarded from the server
	hostID   atomic.Uint64
	wg       sync.WaitGroup
}

// NewStdio returns a stdio front.
func NewStdio(cfg StdioConfig) *Stdio {
	if cfg.InlineLimit <= 0 {
		cfg.InlineLimit = 8 << 20
	}
	if cfg.FileDir == "" {
		cfg.FileDir = os.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Stdio{cfg: cfg, log: cfg.Logger, pending: map[string]context.CancelFunc{}}
}

// Run serves the host on in and out until in ends; then it lets the work in
// flight finish, shuts the MCP-Flow session down and returns nil. Only
// protocol messages are written to out.
func (b *Stdio) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	b.out = out
	r := NewReader(in)
	for {
		msg, framing, err := r.Read()
		var fe *FramingError
		switch {
		case errors.As(err, &fe):
			b.log.Warn("unreadable message", "err", fe)
			b.write(jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeParseError, fe.Error())))
			continue
		case err == io.EOF:
			return b.finish()
		case err != nil:
			b.finish()
			return err
		}
		// Answer in the framing the host uses.
		b.framing.Store(int32(framing))
		p, err := codec.Default(codec.JSON).Decode(bytes.Clone(msg))
		if err != nil {
			b.write(jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeParseError, err.Error())))
			continue
		}
		msgs, replies := jsonrpc.Validate(p)
		if p.Batch {
			b.batch(ctx, msgs, replies)
			continue
		}
		for _, rep := range replies {
			b.write(rep)
		}
		for _, m := range msgs {
			b.dispatch(ctx, m)
		}
	}
}

// BatchesAllowed reports whether MCP protocol version v has JSON-RPC
// batches: 2025-03-26 added them, 2025-06-18 removed them (MCP changelog
// 2025-06-18).
func BatchesAllowed(v string) bool { return v != "" && v < "2025-06-18" }

// batchError is the answer to a batch the session's protocol version does
// not allow, or one sent before initialize (which 2025-03-26 forbids in a
// batch).
func batchError(version string) *jsonrpc.Response {
	msg := "JSON-RPC batches are not part of MCP " + version + " (only 2025-03-26 has them)"
	if version == "" {
		msg = "a batch before initialize: initialize must be sent alone (MCP 2025-03-26 lifecycle)"
	}
	return jsonrpc.NewErrorResponse(jsonrpc.NullID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, msg))
}

func alreadyInitialized(id jsonrpc.ID) *jsonrpc.Response {
	return jsonrpc.NewErrorResponse(id, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "already initialized"))
}

// version is the session's negotiated MCP protocol version ("" before
// initialize).
func (b *Stdio) version() string {
	if s := b.session(); s != nil {
		return s.InitializeResult().ProtocolVersion
	}
	return ""
}

// batch answers a batch (JSON-RPC 2.0 §6) where the protocol version allows
// it: its requests run concurrently and their responses go out together in
// one array, in any order, once all are in; a batch of notifications and
// responses only gets no answer. Elsewhere the whole batch is refused with
// one -32600 error and nothing in it is processed.
func (b *Stdio) batch(ctx context.Context, msgs []jsonrpc.Message, replies []*jsonrpc.Response) {
	if v := b.version(); !BatchesAllowed(v) {
		b.write(batchError(v))
		return
	}
	var mu sync.Mutex
	out := slices.Clone(replies)
	var calls sync.WaitGroup
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			b.dispatch(ctx, m) // notifications and responses
			continue
		}
		if req.Method == flow.MethodInitialize {
			out = append(out, alreadyInitialized(req.ID))
			continue
		}
		b.wg.Add(1)
		calls.Add(1)
		go func() {
			defer b.wg.Done()
			defer calls.Done()
			if r := b.call(ctx, req); r != nil {
				mu.Lock()
				out = append(out, r)
				mu.Unlock()
			}
		}()
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		calls.Wait()
		if len(out) > 0 {
			b.writeBatch(out)
		}
	}()
}

// writeBatch writes the responses to a batch as one batch.
func (b *Stdio) writeBatch(rs []*jsonrpc.Response) {
	if b.emit != nil { // the HTTP front: one by one, on the POST's stream
		for _, r := range rs {
			b.write(r)
		}
		return
	}
	ms := make([]jsonrpc.Message, len(rs))
	for i, r := range rs {
		b.logMessage("to host", r)
		ms[i] = r
	}
	b.writeBody(jsonrpc.AppendBatchJSON(nil, ms))
}

// writeBody writes one message or batch to the host, in the host's framing.
func (b *Stdio) writeBody(body []byte) {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	if _, err := b.out.Write(AppendFramed(nil, Framing(b.framing.Load()), body)); err != nil {
		b.log.Warn("stdout write failed", "err", err)
	}
}

// finish waits for the host's requests in flight, then ends the session.
func (b *Stdio) finish() error {
	b.wg.Wait()
	b.mu.Lock()
	s := b.sess
	b.mu.Unlock()
	if s != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx, "stdio host closed its input"); err != nil {
			b.log.Debug("shutdown", "err", err)
		}
	}
	return nil
}

func (b *Stdio) write(m jsonrpc.Message) {
	b.logMessage("to host", m)
	if b.emit != nil {
		b.emit(m)
		return
	}
	b.writeBody(jsonrpc.AppendJSON(nil, m))
}

// logMessage logs one message at debug level (stderr, with -debug or
// MCP_FLOW_DEBUG=1).
func (b *Stdio) logMessage(dir string, m jsonrpc.Message) {
	if !b.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	switch m := m.(type) {
	case *jsonrpc.Request:
		b.log.Debug(dir, "method", m.Method, "id", m.ID.String())
	case *jsonrpc.Response:
		b.log.Debug(dir, "response", m.ID.String(), "error", m.Error != nil)
	}
}

func (b *Stdio) dispatch(ctx context.Context, m jsonrpc.Message) {
	b.logMessage("from host", m)
	switch m := m.(type) {
	case *jsonrpc.Response:
		b.hostWait.deliver(m)
	case *jsonrpc.Request:
		if !m.IsCall() {
			b.notification(m)
			return
		}
		if m.Method == flow.MethodInitialize {
			if b.session() != nil {
				b.write(alreadyInitialized(m.ID))
				return
			}
			// On the reading goroutine: requests that follow wait for it.
			b.write(b.initialize(ctx, m))
			return
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if r := b.call(ctx, m); r != nil {
				b.write(r)
			}
		}()
	}
}

func (b *Stdio) session() *flow.Session {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sess
}

func (b *Stdio) notification(n *jsonrpc.Request) {
	switch n.Method {
	case flow.MethodCancelled:
		var p flow.CancelParams
		if json.Unmarshal(n.Params, &p) == nil {
			b.mu.Lock()
			cancel := b.pending[p.RequestID.Raw()]
			b.mu.Unlock()
			if cancel != nil {
				cancel() // Call sends $/cancel
			}
		}
	case flow.MethodInitialized:
		// flow.Dial has sent it already.
	default:
		if s := b.session(); s != nil {
			_ = s.Notify(n.Method, n.Params)
		}
	}
}

// call answers one request of the host through the MCP-Flow session; nil
// when the host cancelled it (MCP sends no response then).
func (b *Stdio) call(ctx context.Context, m *jsonrpc.Request) *jsonrpc.Response {
	s := b.session()
	if s == nil {
		if m.Method == flow.MethodPing {
			return &jsonrpc.Response{ID: m.ID, Result: json.RawMessage("{}")}
		}
		return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "not initialized"))
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.mu.Lock()
	b.pending[m.ID.Raw()] = cancel
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.pending, m.ID.Raw())
		b.mu.Unlock()
	}()
	var opts []flow.CallOption
	params := m.Params
	if tok := progressToken(params); tok != nil {
		// The host's token goes back on every update; MCP-Flow uses its own.
		params = withoutProgressToken(params)
		opts = append(opts, flow.WithProgress(func(p flow.Progress) {
			p.ProgressToken = tok
			n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, flow.MethodProgress, p)
			b.write(n)
		}))
	}
	resp, err := s.Call(cctx, m.Method, params, opts...)
	if cctx.Err() != nil && ctx.Err() == nil {
		return nil // the host cancelled: MCP sends no response
	}
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &je):
		return jsonrpc.NewErrorResponse(m.ID, je)
	case err != nil:
		return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, "MCP-Flow: "+err.Error()))
	}
	result, err := b.inline(cctx, resp)
	if err != nil {
		return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error()))
	}
	return &jsonrpc.Response{ID: m.ID, Result: result}
}

// initialize dials the MCP-Flow server with the host's initialize and
// answers with the server's result, minus the transport object.
func (b *Stdio) initialize(ctx context.Context, m *jsonrpc.Request) *jsonrpc.Response {
	var p flow.InitializeParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "initialize params: "+err.Error()))
	}
	cc := b.cfg.Client
	cc.Info, cc.Capabilities, cc.ProtocolVersion = p.ClientInfo, p.Capabilities, p.ProtocolVersion
	// A plain MCP host expects every progress notification, in order and
	// before the result: progress rides the control stream, not datagrams
	// (which may be lost or overtaken).
	cc.DisableDatagrams = true
	cc.Handler = flow.HandlerFunc(b.forwardToHost)
	cc.Hooks.Notification = func(_ *flow.Session, n *jsonrpc.Request) {
		if !strings.HasPrefix(n.Method, "$/") {
			b.write(n)
		}
	}
	s, err := flow.Dial(ctx, b.cfg.URL, cc)
	if err != nil {
		return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, "cannot reach the MCP-Flow server: "+err.Error()))
	}
	b.mu.Lock()
	b.sess = s
	b.mu.Unlock()
	res := *s.InitializeResult()
	out := map[string]any{"protocolVersion": res.ProtocolVersion, "capabilities": res.Capabilities, "serverInfo": res.ServerInfo}
	if res.Instructions != "" {
		out["instructions"] = res.Instructions
	}
	r, _ := jsonrpc.NewResult(m.ID, out)
	return r
}

// forwardToHost sends the server's request (sampling, roots, elicitation)
// to the host under an id of the bridge's own, and returns its answer.
func (b *Stdio) forwardToHost(ctx context.Context, req *flow.Request) (any, error) {
	id := jsonrpc.StringID(fmt.Sprintf("mcp-flow-%d", b.hostID.Add(1)))
	ch, forget := b.hostWait.add(id)
	defer forget()
	b.log.Debug("server request to the host", "method", req.Method, "id", id.String())
	b.write(&jsonrpc.Request{ID: id, Method: req.Method, Params: req.Params})
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, flow.MethodCancelled, map[string]any{"requestId": json.RawMessage(id.Raw())})
		b.write(n)
		return nil, ctx.Err()
	}
}

// inline replaces each ref/stream block of a result with content a plain MCP
// client understands (ref/stream is no MCP content type): text for text
// under InlineLimit, an embedded resource with a base64 blob for other
// bytes, a resource_link to a file past InlineLimit. A stream that fails
// fails the call: a truncated payload is never passed on.
func (b *Stdio) inline(ctx context.Context, resp *flow.Response) (json.RawMessage, error) {
	if len(resp.Refs) == 0 {
		return resp.Result, nil
	}
	defer resp.Close()
	var res map[string]json.RawMessage
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		return nil, err
	}
	var content []json.RawMessage
	if err := json.Unmarshal(res["content"], &content); err != nil {
		return nil, err
	}
	for i, c := range content {
		var ref flow.StreamRef
		if json.Unmarshal(c, &ref) != nil || ref.Type != flow.ContentTypeRef {
			continue
		}
		block, err := b.inlineStream(ctx, resp, ref, c)
		if err != nil {
			return nil, err
		}
		content[i] = block
	}
	var err error
	if res["content"], err = json.Marshal(content); err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (b *Stdio) inlineStream(ctx context.Context, resp *flow.Response, ref flow.StreamRef, refBlock json.RawMessage) (json.RawMessage, error) {
	sr, err := resp.Stream(ctx, ref.StreamTag)
	if err != nil {
		return nil, fmt.Errorf("execution stream %d: %w", ref.StreamTag, err)
	}
	head, err := io.ReadAll(io.LimitReader(sr, b.cfg.InlineLimit+1))
	if err != nil {
		return nil, fmt.Errorf("execution stream %d failed: %w", ref.StreamTag, err)
	}
	mime := ref.MimeType
	if int64(len(head)) <= b.cfg.InlineLimit {
		if orig, field, ok := original(refBlock); ok {
			// An upstream bridge moved this block's payload: put it back.
			if err := drain(sr); err != nil {
				return nil, err
			}
			return restore(orig, field, head)
		}
		if isText(mime) && utf8.Valid(head) {
			return json.Marshal(map[string]any{"type": "text", "text": string(head)})
		}
		return json.Marshal(map[string]any{"type": "resource", "resource": map[string]any{
			"uri": fmt.Sprintf("mcp-flow://stream/%s/%d", resp.ID.Raw(), ref.StreamTag), "mimeType": mime,
			"blob": base64.StdEncoding.EncodeToString(head)}})
	}
	f, err := os.CreateTemp(b.cfg.FileDir, "mcp-flow-stream-*.part")
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(f, io.MultiReader(bytes.NewReader(head), sr))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("execution stream %d failed: %w", ref.StreamTag, err)
	}
	final := strings.TrimSuffix(f.Name(), ".part")
	if err := os.Rename(f.Name(), final); err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(final)
	return json.Marshal(map[string]any{"type": "resource_link", "uri": "file://" + abs, "name": filepath.Base(abs), "mimeType": mime, "size": n})
}

func isText(mime string) bool {
	return strings.HasPrefix(mime, "text/") || strings.HasPrefix(mime, "application/json")
}

func progressToken(params json.RawMessage) json.RawMessage {
	var p struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.Meta.ProgressToken
}

func withoutProgressToken(params json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return params
	}
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(m["_meta"], &meta)
	delete(meta, "progressToken")
	if len(meta) == 0 {
		delete(m, "_meta")
	} else {
		m["_meta"], _ = json.Marshal(meta)
	}
	out, _ := json.Marshal(m)
	return out
}

// original returns the block an upstream bridge replaced with this ref.
func original(refBlock json.RawMessage) (map[string]json.RawMessage, string, bool) {
	var r struct {
		Meta map[string]struct {
			Block map[string]json.RawMessage `json:"block"`
			Field string                     `json:"field"`
		} `json:"_meta"`
	}
	if json.Unmarshal(refBlock, &r) != nil {
		return nil, "", false
	}
	o, ok := r.Meta[OriginalKey]
	return o.Block, o.Field, ok && o.Block != nil && o.Field != ""
}

// drain reads what is left of a stream (nothing, when the inline limit was
// not reached) so that it ends cleanly.
func drain(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}
