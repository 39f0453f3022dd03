// Package protocol names what MCP-Flow 0.1 puts on the wire (docs/spec.md):
// its transport type and version, its methods, the ref/stream content type,
// the encodings and the MCP revisions. Each name is defined here once.
//
// It is a leaf: it imports nothing of this module and holds no behaviour, so
// that the code that speaks the protocol (flow, bridge) and the code that
// judges it (conformance) can share its names. Beyond names they share only
// the packages below flow: wire (bytes), codec (encodings), jsonrpc
// (messages) and wtconn (the WebTransport seam). The judge writes the
// session and stream rules, the reset codes and the test tools' bytes for
// itself, and imports nothing of flow, bridge or demotools
// (conformance/TestJudgeImportsNoImplementation).
package protocol

// The transport object of initialize (spec §4.1).
const (
	// TransportType names MCP-Flow in the transport object's type.
	TransportType = "mcp-flow"
	// Version is the MCP-Flow version this module speaks.
	Version = "0.1"
)

// MCP-Flow's own methods.
const (
	MethodCancel      = "$/cancel"      // spec §7.1
	MethodStreamError = "$/streamError" // spec §5.4
	MethodShutdown    = "$/shutdown"    // spec §7.2

	// MethodPrefix starts the method of every MCP-Flow method; MCP has none
	// that starts so.
	MethodPrefix = "$/"
)

// MCP's methods that MCP-Flow's session layer and bridges handle themselves.
const (
	MethodInitialize  = "initialize"
	MethodInitialized = "notifications/initialized"
	MethodPing        = "ping"
	MethodProgress    = "notifications/progress"
	MethodLogMessage  = "notifications/message"
	MethodCancelled   = "notifications/cancelled" // MCP's cancellation; MCP-Flow's is MethodCancel

	// NotificationPrefix starts the method of every MCP notification.
	NotificationPrefix = "notifications/"
)

// ContentTypeRef is the type of the content block that names an execution
// stream in a result (spec §5.2).
const ContentTypeRef = "ref/stream"

// MetaProgressToken is the _meta key of a request that asks for progress
// (MCP progress; spec §6.2).
const MetaProgressToken = "progressToken"

// The size of a request's execution streams, told as progress (spec §6.3):
// a notifications/progress whose _meta holds MetaProgressUnit:
// ProgressUnitBytes counts bytes of the request's execution streams, and its
// total is their size, all streams together. The ref/stream block of 0.1 has
// no size member; this is how a client learns one.
const (
	MetaProgressUnit  = "mcp-flow/unit"
	ProgressUnitBytes = "bytes"
)

// The encodings of MCP-Flow 0.1 (spec §4.4), as the transport object names
// them. Package codec implements them.
const (
	EncodingJSON     = "json"
	EncodingCBOR     = "cbor"
	EncodingProtobuf = "protobuf"
)

// MCP protocol revisions (protocolVersion of initialize). The dates order as
// the revisions do, so they compare as strings.
const (
	MCP20241105 = "2024-11-05"
	MCP20250326 = "2025-03-26" // the last with JSON-RPC batches
	MCP20250618 = "2025-06-18"
	MCP20251125 = "2025-11-25"

	// MCPLatest is the newest revision: what a session offers unless told
	// otherwise.
	MCPLatest = MCP20251125
)

// MCPVersions returns the MCP revisions an MCP-Flow session accepts, newest
// first (spec §4.1). Each call returns a new slice.
func MCPVersions() []string {
	return []string{MCP20251125, MCP20250618, MCP20250326, MCP20241105}
}

// MCP-Flow's proposal beyond the guide (spec §11): negotiation without MCP's
// initialize, for MCP 2026-07-28.
const (
	// MethodHello is the transport's own first frame (spec §11.3).
	MethodHello = "$/hello"
	// VersionHello is the MCP-Flow version a $/hello carries.
	VersionHello = "0.2"
)

// MCP 2026-07-28 (stateless) names (spec §11.5).
const (
	MCP20260728 = "2026-07-28"

	MethodDiscover = "server/discover"

	// MetaProtocolVersion, MetaClientCapabilities and MetaServerInfo are
	// the _meta keys of 2026-07-28.
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"

	// MethodListen opens a subscription: a long-lived request whose first
	// message is MethodSubscriptionsAcknowledged, then the change
	// notifications it asked for, each naming the request in _meta
	// MetaSubscriptionID (SEP-2575; go-sdk v1.8 mcp/protocol.go, the
	// TypeScript SDK v2 client's SubscriptionsListenRequestSchema).
	MethodListen                    = "subscriptions/listen"
	MethodSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
	MetaSubscriptionID              = "io.modelcontextprotocol/subscriptionId"

	// The change notifications a subscription carries (and a 2025 session
	// gets unasked, resources/updated after resources/subscribe).
	MethodToolsListChanged     = "notifications/tools/list_changed"
	MethodPromptsListChanged   = "notifications/prompts/list_changed"
	MethodResourcesListChanged = "notifications/resources/list_changed"
	MethodResourceUpdated      = "notifications/resources/updated"

	// CodeUnsupportedProtocolVersion is UnsupportedProtocolVersionError's
	// code; its data is {supported, requested}.
	CodeUnsupportedProtocolVersion = -32022
	// CodeHeaderMismatch is HeaderMismatchError's: a Streamable HTTP
	// request whose routing headers (MCP-Protocol-Version, Mcp-Method,
	// Mcp-Name) are missing or disagree with its body (spec §11.6).
	CodeHeaderMismatch = -32020
)

// IsChange reports whether method is one of the change notifications a
// subscriptions/listen carries (MethodToolsListChanged,
// MethodPromptsListChanged, MethodResourcesListChanged,
// MethodResourceUpdated).
func IsChange(method string) bool {
	switch method {
	case MethodToolsListChanged, MethodPromptsListChanged, MethodResourcesListChanged, MethodResourceUpdated:
		return true
	}
	return false
}

// MCPStatelessVersions returns the stateless MCP revisions a flow server
// accepts per request (spec §11.5), newest first.
func MCPStatelessVersions() []string { return []string{MCP20260728} }
