package mcpjson

import "sync/atomic"

// PassKind says what one pass over a whole result did. The passes are
// counted by a test (bridge's TestParseCount) to hold each hop of a
// message to one decode and one encode (docs/design.md, "How a message
// flows").
type PassKind uint8

const (
	// Decode: the result's text (or its binary encoding) was parsed whole:
	// validated, transcoded to JSON text, or unmarshalled into Go values.
	Decode PassKind = iota + 1
	// Scan: the result was read for its structure only (a codec's limits
	// and well-formedness, the spans of members or content blocks);
	// nothing was unmarshalled.
	Scan
	// Encode: the result was serialized from Go values, or transcoded from
	// JSON text to another encoding.
	Encode
	// Copy: the result's bytes were copied whole into another buffer (a
	// splice, a JSON-RPC envelope, a frame).
	Copy
)

// String returns the kind's name: "decode", "scan", "encode" or "copy".
func (k PassKind) String() string {
	switch k {
	case Decode:
		return "decode"
	case Scan:
		return "scan"
	case Encode:
		return "encode"
	case Copy:
		return "copy"
	}
	return "pass?"
}

// PassFunc receives one pass: who made it (side: "server", "client",
// "front", "upstream"), where (site), what kind, and the result's JSON text
// (the input of a decode or scan, the output of an encode or copy where
// that is JSON).
type PassFunc func(side, site string, k PassKind, result []byte)

var passHook atomic.Pointer[PassFunc]

// Pass reports one pass over a whole result to the PassFunc that
// CountPasses installed. Without one it costs one atomic load.
func Pass(side, site string, k PassKind, result []byte) {
	if f := passHook.Load(); f != nil {
		(*f)(side, site, k, result)
	}
}

// Counting reports whether a PassFunc is installed: a caller whose report
// costs more than a call skips it when not.
func Counting() bool { return passHook.Load() != nil }

// CountPasses makes f receive every Pass until stop is called. It is for
// tests; f is called concurrently, from any goroutine that makes a pass.
func CountPasses(f PassFunc) (stop func()) {
	passHook.Store(&f)
	return func() { passHook.CompareAndSwap(&f, nil) }
}
