package flow

import (
	"encoding/binary"

	"github.com/mcp-flow/mcp-flow/wire"
)

// Faults make a server break MCP-Flow on purpose, one rule each, so that a
// conformance runner can be shown to catch every fault (and only the check
// meant for it fails). Like x/net/http2's AllowIllegalWrites, they exist for
// testing; a server for anything else leaves them all false.
type Faults struct {
	// StreamHeaderLittleEndian writes execution stream headers little-endian
	// (spec §3.2).
	StreamHeaderLittleEndian bool
	// NoEncodingSwitch announces the negotiated encoding but keeps JSON
	// (spec §4.2).
	NoEncodingSwitch bool
	// CancelCode32000 answers $/cancel with -32000, as the guide's §6 does,
	// instead of -32800 (spec §7.1).
	CancelCode32000 bool
	// NoOriginCheck accepts a CONNECT from any Origin (spec §9).
	NoOriginCheck bool
	// TruncateWithoutStreamError ends a failing execution stream with a
	// clean FIN and no $/streamError, so a truncated payload looks complete
	// (spec §5.4).
	TruncateWithoutStreamError bool
	// NoDrainOnShutdown closes the session as soon as $/shutdown arrives,
	// losing what is in flight (spec §7.2).
	NoDrainOnShutdown bool
	// NoInjectionCheck takes an execution stream naming no request in
	// silence (spec §5.3).
	NoInjectionCheck bool
	// GuideOnly answers $/hello and 2026-07-28 requests before initialize
	// with -32600, as a server that knows only the guide does (spec §11.4).
	GuideOnly bool
}

// faults returns the server's faults (none on a client).
func (s *Session) faults() Faults {
	if s.srv.cfg == nil {
		return Faults{}
	}
	return s.srv.cfg.Faults
}

// streamHeader encodes an execution stream header, wrongly if asked to.
func (s *Session) streamHeader(h wire.StreamHeader) []byte {
	if s.faults().StreamHeaderLittleEndian {
		b := binary.LittleEndian.AppendUint32(nil, h.RequestID)
		return binary.LittleEndian.AppendUint32(b, h.StreamTag)
	}
	return h.Append(nil)
}
