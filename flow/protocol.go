package flow

import (
	"encoding/json"
	"time"

	"github.com/mcp-flow/mcp-flow/codec"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
	"github.com/mcp-flow/mcp-flow/mcpjson"
	"github.com/mcp-flow/mcp-flow/protocol"
	"github.com/quic-go/webtransport-go"
)

// DefaultPath is the URL path servers listen on unless told otherwise. The
// names on the wire (methods, transport type, MCP revisions) are in package
// protocol.
const DefaultPath = "/mcp-flow"

// mcpVersions lists the MCP protocol revisions a server accepts, newest
// first. A client asking for another gets the newest (spec §4.1).
var mcpVersions = protocol.MCPVersions()

// ClientTransport is the transport object a client puts in the initialize
// params (spec §4.1).
type ClientTransport struct {
	Type      string       `json:"type"`
	Version   string       `json:"version,omitempty"`
	Encodings []codec.Name `json:"encodings,omitempty"`
	// Datagrams (this project's addition, spec §4.1) lets a client refuse
	// datagrams: false keeps progress, audio and logs on the control stream.
	// Absent (nil) means datagrams when the server supports them, as the
	// guide's schema, which has no such field, promises (spec §6).
	Datagrams *bool `json:"datagrams,omitempty"`
}

// ServerTransport is the guide's ServerTransportCapabilities: the transport
// object of the initialize result (spec §4.1).
type ServerTransport struct {
	Type                 string     `json:"type"`
	Version              string     `json:"version"`
	Encoding             codec.Name `json:"encoding"`
	MaxConcurrentStreams int        `json:"maxConcurrentStreams"`
	DatagramsSupported   bool       `json:"datagramsSupported"`
	MaxFrameSize         uint32     `json:"maxFrameSize"`
}

// Implementation names a client or server (MCP's Implementation).
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// InitializeParams is the params of initialize as MCP-Flow reads them.
// Capabilities and any other member stay raw.
type InitializeParams struct {
	ProtocolVersion string           `json:"protocolVersion"`
	Capabilities    json.RawMessage  `json:"capabilities,omitempty"`
	ClientInfo      Implementation   `json:"clientInfo"`
	Transport       *ClientTransport `json:"transport,omitempty"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      Implementation  `json:"serverInfo"`
	Instructions    string          `json:"instructions,omitempty"`
	Transport       ServerTransport `json:"transport"`
}

// CancelParams is the params of $/cancel (spec §7.1).
type CancelParams struct {
	RequestID jsonrpc.ID `json:"requestId"`
	Reason    string     `json:"reason,omitempty"`
}

// StreamErrorParams is the params of $/streamError (spec §5.4, guide §4.3).
type StreamErrorParams struct {
	RequestID uint32 `json:"requestId"`
	StreamTag uint32 `json:"streamTag"`
	Error     string `json:"error"`
}

// ShutdownParams is the optional params of $/shutdown (spec §7.2).
type ShutdownParams struct {
	Reason string `json:"reason,omitempty"`
}

// StreamRef is the content block that names an execution stream in a result
// (spec §5.2): {"type":"ref/stream","streamTag":1,"mimeType":"text/plain"}.
// Package mcpjson reads and writes it; a ref of Response.Refs carries its
// block's span in Response.Result.
type StreamRef = mcpjson.Ref

// Progress is the params of notifications/progress, and the payload of a
// progress datagram (spec §6.2).
type Progress struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         float64         `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
	Meta          json.RawMessage `json:"_meta,omitempty"`
}

// Bytes reports whether p counts bytes of its request's execution streams
// (spec §6.3: _meta "mcp-flow/unit": "bytes"); Total is then the size of
// those streams, all together.
func (p Progress) Bytes() bool {
	var m map[string]json.RawMessage
	if len(p.Meta) == 0 || json.Unmarshal(p.Meta, &m) != nil {
		return false
	}
	var unit string
	return json.Unmarshal(m[protocol.MetaProgressUnit], &unit) == nil && unit == protocol.ProgressUnitBytes
}

// Session close codes (spec §8.2): one per way a session ends. They travel
// in the WebTransport CLOSE_WEBTRANSPORT_SESSION capsule, so both sides
// report the same code for the same ending, except CloseConnectionLost,
// which nobody can send: a side that stops hearing from its peer reports it
// alone. CloseText gives each its words.
const (
	CloseOK               webtransport.SessionErrorCode = 0x00 // $/shutdown drain complete
	CloseProtocolError    webtransport.SessionErrorCode = 0x01 // a control frame that cannot be read past
	CloseHandshakeTimeout webtransport.SessionErrorCode = 0x02 // no initialize in time
	CloseDrainTimeout     webtransport.SessionErrorCode = 0x03 // $/shutdown drain deadline passed
	CloseInternalError    webtransport.SessionErrorCode = 0x04
	CloseGoingAway        webtransport.SessionErrorCode = 0x05 // closed without drain by Close
	CloseRefused          webtransport.SessionErrorCode = 0x06 // initialize refused (transport, version, encodings)
	CloseConnectionLost   webtransport.SessionErrorCode = 0x07 // peer gone: QUIC idle timeout or reset; never sent
	CloseStalled          webtransport.SessionErrorCode = 0x08 // the peer read nothing of the control stream for StreamWriteStallTimeout
)

// CloseText returns the words for a session close code (spec §8.2).
func CloseText(c webtransport.SessionErrorCode) string {
	switch c {
	case CloseOK:
		return "clean shutdown"
	case CloseProtocolError:
		return "protocol error"
	case CloseHandshakeTimeout:
		return "handshake timeout"
	case CloseDrainTimeout:
		return "drain deadline passed"
	case CloseInternalError:
		return "internal error"
	case CloseGoingAway:
		return "closed without drain"
	case CloseRefused:
		return "session refused"
	case CloseConnectionLost:
		return "peer gone"
	case CloseStalled:
		return "peer stopped reading"
	}
	return "unknown close code"
}

// The default timings of a $/shutdown drain (spec §7.2, §8):
// Limits.ShutdownGrace and Limits.PeerFINWait.
const (
	DefaultShutdownGrace = 50 * time.Millisecond
	DefaultPeerFINWait   = 250 * time.Millisecond
)

// StreamCode returns the stream reset code that carries a JSON-RPC error
// code on an execution stream (spec §5.4): its absolute value, so that 32800
// is a cancelled request and 32002 a refused injection.
func StreamCode(c jsonrpc.Code) webtransport.StreamErrorCode {
	if c < 0 {
		return webtransport.StreamErrorCode(-c)
	}
	return webtransport.StreamErrorCode(c)
}
