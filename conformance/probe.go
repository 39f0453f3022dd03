// Package conformance judges MCP-Flow peers against docs/spec.md. In server
// mode the runner is the client: it opens raw WebTransport sessions and
// speaks MCP-Flow by hand, so that it can also break the rules on purpose
// and see how the server answers. Every check is bounded in time: a peer
// that hangs fails that check, it does not hang the run.
package conformance

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/internal/draft02"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/mcp-flow/mcp-flow/wire"
	"github.com/mcp-flow/mcp-flow/wtconn"
)

// Target is the server under test.
type Target struct {
	URL string
	TLS *tls.Config
	// Dialect is the WebTransport version to speak (DialectAuto: the
	// current one, or draft-02 for a server that only speaks that).
	Dialect Dialect
}

// probe is one raw session with the server.
type probe struct {
	ctx    context.Context
	sess   conn
	ctrl   wtconn.Stream
	fr     *wire.FrameReader
	enc    codec.Codec
	init   *initResult
	nextID int
	// by, when set, ends reads sooner than ctx: the wait for a notice
	// (Options.AnswerWait).
	by time.Time
}

type initResult struct {
	Transport    transportSeen   `json:"transport"`
	Capabilities json.RawMessage `json:"capabilities"`
}

// transportSeen is the transport object of an initialize result as the
// server sent it (absent fields stay absent).
type transportSeen struct {
	Type                 string     `json:"type"`
	Version              string     `json:"version"`
	Encoding             codec.Name `json:"encoding"`
	MaxConcurrentStreams int        `json:"maxConcurrentStreams"`
	DatagramsSupported   *bool      `json:"datagramsSupported"`
	MaxFrameSize         uint32     `json:"maxFrameSize,omitempty"`
}

// dial opens a session and its control stream. h is sent with the CONNECT.
func dial(ctx context.Context, t Target, h http.Header) (*probe, *http.Response, error) {
	sess, resp, err := dialConn(ctx, t, h)
	if err != nil {
		return nil, resp, err
	}
	ctrl, err := sess.OpenStreamSync(ctx)
	if err != nil {
		sess.close()
		return nil, resp, err
	}
	return &probe{ctx: ctx, sess: sess, ctrl: ctrl, fr: wire.NewFrameReader(ctrl, 64<<20), enc: codec.Default(codec.JSON), nextID: 1}, resp, nil
}

func (p *probe) close() { p.sess.close() }

// writeRaw writes bytes to the control stream as they are.
func (p *probe) writeRaw(b []byte) error {
	_, err := p.ctrl.Write(b)
	return err
}

// sendJSON frames a JSON text as it is.
func (p *probe) sendJSON(s string) error { return p.writeRaw(wire.AppendFrame(nil, []byte(s))) }

// send encodes m in the probe's encoding.
func (p *probe) send(m jsonrpc.Message) error {
	b, err := p.enc.Append(nil, m)
	if err != nil {
		return err
	}
	return p.writeRaw(wire.AppendFrame(nil, b))
}

// read reads one frame and decodes it in the probe's encoding. It fails
// when nothing arrives before the context's deadline.
func (p *probe) read() ([]jsonrpc.Message, []byte, error) {
	dl, ok := p.ctx.Deadline()
	if !p.by.IsZero() && (!ok || p.by.Before(dl)) {
		dl, ok = p.by, true
	}
	if ok {
		_ = p.ctrl.SetReadDeadline(dl)
	}
	f, err := p.fr.ReadFrame()
	if err != nil {
		return nil, nil, err
	}
	raw := append([]byte(nil), f...)
	pl, err := p.enc.Decode(raw)
	if err != nil {
		return nil, raw, fmt.Errorf("frame does not decode as %s: %w", p.enc.Name(), err)
	}
	msgs, _ := jsonrpc.Validate(pl)
	return msgs, raw, nil
}

// response reads until the response with id arrives, passing notifications
// to note (when set).
func (p *probe) response(id jsonrpc.ID, note func(*jsonrpc.Request)) (*jsonrpc.Response, error) {
	for {
		msgs, _, err := p.read()
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			switch m := m.(type) {
			case *jsonrpc.Response:
				if m.ID == id {
					return m, nil
				}
			case *jsonrpc.Request:
				if note != nil {
					note(m)
				}
			}
		}
	}
}

// nullError reads until an error response with a null id arrives.
func (p *probe) nullError() (*jsonrpc.Error, error) {
	r, err := p.response(jsonrpc.NullID, nil)
	if err != nil {
		return nil, err
	}
	if r.Error == nil {
		return nil, errors.New("a null-id response without an error")
	}
	return r.Error, nil
}

// notice reads until an error response with a null id arrives, within
// Options.AnswerWait from now: it answers no request, so silence past the
// wait is the verdict (waits).
func (p *probe) notice() (*jsonrpc.Error, error) {
	var e *jsonrpc.Error
	err := p.within(func() (err error) {
		e, err = p.nullError()
		return err
	})
	return e, err
}

// within runs f with the probe's reads bounded by Options.AnswerWait from
// now.
func (p *probe) within(f func() error) error {
	p.by = time.Now().Add(answerWait(p.ctx))
	defer func() { p.by = time.Time{} }()
	return f()
}

// initialize runs the handshake in JSON with the given transport object
// (nil: none) and switches to the chosen encoding.
func (p *probe) initialize(transport map[string]any) (*jsonrpc.Response, error) {
	params := map[string]any{"protocolVersion": protocol.MCPLatest, "capabilities": map[string]any{}, "clientInfo": map[string]string{"name": "mcp-flow-conformance", "version": "0.1"}}
	if transport != nil {
		params["transport"] = transport
	}
	id := jsonrpc.Int64ID(int64(p.nextID))
	p.nextID++
	req, _ := jsonrpc.NewRequest(id, protocol.MethodInitialize, params)
	if err := p.send(req); err != nil {
		return nil, err
	}
	r, err := p.response(id, nil)
	if err != nil || r.Error != nil {
		return r, err
	}
	var res initResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return r, fmt.Errorf("initialize result: %w", err)
	}
	p.init = &res
	if c := codec.Default(res.Transport.Encoding); c != nil {
		p.enc = c
	}
	n, _ := jsonrpc.NewRequest(jsonrpc.ID{}, protocol.MethodInitialized, nil)
	return r, p.send(n)
}

// wish is what a probe's initialize says about datagrams.
type wish int

// The wishes. schemaOnly sends only the members of the published schema's
// ClientTransportCapabilities (type, version, encodings), as a client that
// follows the guide does; noDatagrams adds this project's datagrams: false.
const (
	schemaOnly wish = iota
	noDatagrams
)

// ready dials and initializes with the given encodings and datagram wish.
func ready(ctx context.Context, t Target, encodings []string, w wish) (*probe, error) {
	p, _, err := dial(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	tr := map[string]any{"type": protocol.TransportType, "version": protocol.Version, "encodings": encodings}
	if w == noDatagrams {
		tr["datagrams"] = false
	}
	r, err := p.initialize(tr)
	if err == nil && r.Error != nil {
		err = r.Error
	}
	if err != nil {
		p.close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return p, nil
}

// call sends a request in the session's encoding and waits for its answer.
func (p *probe) call(method string, params any, note func(*jsonrpc.Request)) (*jsonrpc.Response, jsonrpc.ID, error) {
	id := jsonrpc.Int64ID(int64(p.nextID))
	p.nextID++
	req, err := jsonrpc.NewRequest(id, method, params)
	if err != nil {
		return nil, id, err
	}
	if err := p.send(req); err != nil {
		return nil, id, err
	}
	r, err := p.response(id, note)
	return r, id, err
}

// needTool returns nil when tools/list names the tool, a skip when it does
// not, and a failure when tools/list is not answered with a result: a peer
// that answers nothing must not pass for one without the test tools.
func (p *probe) needTool(name string) *outcome {
	r, _, err := p.call("tools/list", nil, nil)
	var o outcome
	switch {
	case err != nil:
		o = fail("tools/list: %v", err)
	case r.Error != nil:
		o = fail("tools/list: error %d %q", r.Error.Code, r.Error.Message)
	case !strings.Contains(string(r.Result), `"`+name+`"`):
		o = skip("the server offers no %q tool (the checks use mcp-flow-server's test tools)", name)
	default:
		return nil
	}
	return &o
}

// acceptStream takes the next unidirectional stream and its header.
func (p *probe) acceptStream() (wtconn.ReceiveStream, wire.StreamHeader, error) {
	rs, err := p.sess.AcceptUniStream(p.ctx)
	if err != nil {
		return nil, wire.StreamHeader{}, err
	}
	if dl, ok := p.ctx.Deadline(); ok {
		_ = rs.SetReadDeadline(dl)
	}
	h, err := wire.ReadStreamHeader(rs)
	return rs, h, err
}

// icmpWait bounds how long reach waits for an ICMP port unreachable before
// it dials: on a local address the refusal comes in microseconds.
const icmpWait = 250 * time.Millisecond

// reach reports why nothing answers at t, or nil when something does (a
// WebTransport session, or an HTTP answer to the CONNECT such as 403).
// Nothing listening on a local UDP port is known at once from the ICMP port
// unreachable; anything else gets one real dial within timeout. It returns
// t with its dialect settled: DialectAuto becomes the one that answered.
func reach(ctx context.Context, t Target, timeout time.Duration, notice func(string)) (Target, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return t, fmt.Errorf("bad URL %q: %w", t.URL, err)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	if c, err := net.Dial("udp", addr); err == nil {
		// One byte: a QUIC server drops a datagram this short (RFC 9000
		// §14.1); a closed port answers with ICMP, which a connected UDP
		// socket reports as ECONNREFUSED.
		_, _ = c.Write([]byte{0})
		_ = c.SetReadDeadline(time.Now().Add(icmpWait))
		_, err = c.Read(make([]byte, 1))
		c.Close()
		if errors.Is(err, syscall.ECONNREFUSED) {
			return t, fmt.Errorf("nothing listens on udp %s (ICMP port unreachable)", addr)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if t.Dialect == DialectAuto {
		c, resp, err := dialCurrent(dctx, t, nil)
		switch {
		case err == nil:
			c.close()
			t.Dialect = DialectCurrent
			return t, nil
		case resp != nil:
			t.Dialect = DialectCurrent
			return t, nil // an HTTP answer: the checks say what is wrong with it
		case !draft02.Needed(err):
			return t, fmt.Errorf("no WebTransport session with %s: %w", t.URL, err)
		}
		t.Dialect = DialectDraft02 // and try it
		c, resp, derr := dialConn(dctx, t, nil)
		if derr == nil {
			c.close()
		}
		if derr == nil || resp != nil {
			notice(fmt.Sprintf("%s refused the current WebTransport (%v); speaking WebTransport draft-02 to it for the whole run", t.URL, err))
			return t, nil
		}
		return t, fmt.Errorf("no WebTransport session with %s (WebTransport %s, after the current one was refused: %v): %w", t.URL, t.Dialect, err, derr)
	}
	c, resp, err := dialConn(dctx, t, nil)
	if err == nil {
		c.close()
		return t, nil
	}
	if resp != nil {
		return t, nil
	}
	return t, fmt.Errorf("no WebTransport session with %s (WebTransport %s): %w", t.URL, t.Dialect, err)
}
