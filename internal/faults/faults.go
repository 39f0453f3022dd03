// Package faults makes an MCP-Flow server break the protocol on purpose, one
// rule each, so that a conformance runner can be shown to catch every fault
// and blame only the check meant for it (docs/conformance.md, "Faults").
//
// It is internal so that the switches stay out of the public configuration:
// flow.ServerConfig carries them in an unexported field that only Set fills,
// through the setter flow registers at init. Like x/net/http2's
// AllowIllegalWrites they exist for testing; no command sets them.
//
// It imports nothing of the module, so that flow may import it and the
// conformance judge's tests may too.
package faults

import "fmt"

// Faults are the rules a server breaks; the zero value breaks none.
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

// setter is the function Register stored: a func(*C, Faults) for the one
// configuration type C that carries faults (flow.ServerConfig).
var setter any

// Register is called once, by flow's init, with the function that stores
// faults in its server configuration's unexported field.
func Register[C any](set func(*C, Faults)) {
	if setter != nil {
		panic("faults: Register called twice")
	}
	setter = set
}

// Set makes the server configured by cfg (a *flow.ServerConfig) break the
// rules f names. It panics if cfg's type registered no setter, which is a
// mistake in the test calling it.
func Set[C any](cfg *C, f Faults) {
	set, ok := setter.(func(*C, Faults))
	if !ok {
		panic(fmt.Sprintf("faults: no setter registered for %T (registered: %T)", cfg, setter))
	}
	set(cfg, f)
}
